#!/usr/bin/env node
// The floor for bench/dns-manager/run.mjs: a bare node:http server answering each measured read
// with the very bytes the service answered it with (read off the service once at the start and
// sent here), doing nothing else: no lookup, no parsing, no cache, no rate limit. What moving the
// same answers through HTTP costs with the same Node, on this machine, in this run: the service's
// p99 is read beside it. A large answer's latency at 50 connections is mostly this cost.
//
// Started by run.mjs (fork) with PORT; the answers come as one IPC message,
// [{ method, path, request (the body sent, or ''), contentType, body (base64) }], and it says
// { listening: true } when it serves. Two reads on one path (JSON-RPC) differ by what they send.
import { createServer } from 'node:http'

process.once('message', (list) => {
  const answers = new Map()
  for (const a of list) {
    const body = Buffer.from(a.body, 'base64')
    answers.set(`${a.method} ${a.path}\n${a.request}`, {
      head: ['Content-Type', a.contentType, 'Content-Length', String(body.length)],
      body,
    })
  }
  createServer((req, res) => {
    // The whole request is read first, as the service reads a POST's body before answering.
    const chunks = []
    req.on('data', (chunk) => chunks.push(chunk))
    req.once('end', () => {
      const answer = answers.get(`${req.method} ${req.url}\n${Buffer.concat(chunks).toString('utf8')}`)
      if (!answer) res.writeHead(404).end()
      else res.writeHead(200, answer.head).end(answer.body)
    })
  }).listen(Number(process.env.PORT), '127.0.0.1', () => process.send({ listening: true }))
})
