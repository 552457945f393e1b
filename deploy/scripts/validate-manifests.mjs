#!/usr/bin/env node
/**
 * Renders every overlay of deploy/kubernetes with `kubectl kustomize` and checks each object,
 * offline:
 *
 * 1. against the Kubernetes API schemas of a pinned version (kubernetes-models 5.1.0, and the
 *    Prometheus Operator's for the ServiceMonitor): types, formats, required fields;
 * 2. for fields the schemas do not know (a misspelt `readinesProbe` passes a JSON schema that
 *    allows extra properties): each object is type-checked as an object literal against the
 *    same package's TypeScript interfaces, whose excess-property check names every unknown field;
 * 3. against Quartet's rules: non-root, read-only root filesystem, no privilege escalation, all
 *    capabilities dropped, resources, /healthz liveness and /readyz readiness, a preStop pause and
 *    a grace period above SHUTDOWN_TIMEOUT_MS, every Deployment with its Service, PDB, HPA and
 *    NetworkPolicy, Ingress backends that exist, no secret inline, pinned images in production.
 *
 * `--self-test` breaks a rendered overlay in each of those ways and fails unless every break is
 * caught, so the checks cannot quietly stop checking.
 */
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { parse, parseAllDocuments, stringify } from 'yaml'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, '../kubernetes')

/** What CI renders: each overlay, and production with the optional migration Jobs. */
const TARGETS = [
  { name: 'overlays/dev', dir: path.join(root, 'overlays/dev'), production: false },
  { name: 'overlays/production', dir: path.join(root, 'overlays/production'), production: true },
  {
    name: 'overlays/production + components/migration-job',
    dir: path.join(root, 'overlays/production'),
    withComponent: 'components/migration-job',
    production: true,
  },
]

function render(target) {
  if (!target.withComponent) return kustomize(target.dir)
  // The overlay as an operator would extend it: a copy beside it with one more component.
  const dir = mkdtempSync(path.join(path.dirname(target.dir), '.render-'))
  try {
    const kustomization = parse(readFileSync(path.join(target.dir, 'kustomization.yaml'), 'utf8'))
    // Files of the overlay are copied beside the copy; directories are referred to where they are.
    const local = (p) => path.dirname(path.resolve(target.dir, p)) === target.dir && path.extname(p) !== ''
    for (const key of ['resources', 'components'])
      kustomization[key] = (kustomization[key] ?? []).map((p) =>
        local(p) ? p : path.relative(dir, path.resolve(target.dir, p)),
      )
    kustomization.components.push(path.relative(dir, path.join(root, target.withComponent)))
    for (const file of readdirSync(target.dir))
      if (file !== 'kustomization.yaml') copyFileSync(path.join(target.dir, file), path.join(dir, file))
    writeFileSync(path.join(dir, 'kustomization.yaml'), stringify(kustomization))
    return kustomize(dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function kustomize(dir) {
  const out = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', maxBuffer: 64 << 20 })
  const docs = parseAllDocuments(out)
  for (const d of docs) if (d.errors.length) throw new Error(`${dir}: ${d.errors[0].message}`)
  return docs.map((d) => d.toJS()).filter(Boolean)
}

// --- 1 and 2: the API schemas ------------------------------------------------------------

/** The module of kubernetes-models (or the Prometheus Operator's) that models apiVersion/kind. */
function modelModule(obj) {
  const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : ['', obj.apiVersion]
  if (group === 'monitoring.coreos.com')
    return `@kubernetes-models/prometheus-operator/${group}/${version}/${obj.kind}`
  return `kubernetes-models/${group ? `${group}/` : ''}${version}/${obj.kind}`
}

const label = (o) => `${o.kind}/${o.metadata?.name ?? '?'}`

async function schemaErrors(objects) {
  const errors = []
  for (const o of objects) {
    if (!o.apiVersion || !o.kind) {
      errors.push(`${label(o)}: no apiVersion or kind`)
      continue
    }
    let mod
    try {
      mod = await import(modelModule(o))
    } catch {
      errors.push(`${label(o)}: no schema for ${o.apiVersion} ${o.kind} in the pinned API version`)
      continue
    }
    try {
      new mod[o.kind](o).validate()
    } catch (err) {
      errors.push(`${label(o)}: ${err.message}`)
    }
  }
  return errors
}

/**
 * Each object as a typed object literal in one virtual TypeScript file, checked with the
 * package's interfaces: an unknown field is an excess-property error naming it.
 */
function unknownFieldErrors(objects) {
  const file = path.join(here, '__manifests__.ts')
  const lines = []
  objects.forEach((o, i) => {
    if (!o.apiVersion || !o.kind) return
    lines.push(`import type { I${o.kind} as T${i} } from '${modelModule(o)}'`)
    lines.push(`// ${label(o)}`)
    lines.push(`export const o${i}: T${i} = ${JSON.stringify(o, null, 1)}`)
  })
  const source = lines.join('\n')
  const options = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  }
  const host = ts.createCompilerHost(options)
  const read = host.readFile.bind(host)
  const exists = host.fileExists.bind(host)
  const getSourceFile = host.getSourceFile.bind(host)
  host.readFile = (f) => (path.resolve(f) === file ? source : read(f))
  host.fileExists = (f) => path.resolve(f) === file || exists(f)
  host.getSourceFile = (f, lang, ...rest) =>
    path.resolve(f) === file
      ? ts.createSourceFile(f, source, lang, true, ts.ScriptKind.TS)
      : getSourceFile(f, lang, ...rest)
  const program = ts.createProgram([file], options, host)
  const sourceLines = source.split('\n')
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n').at(-1)
    if (!d.file || path.resolve(d.file.fileName) !== file) return message
    const { line } = d.file.getLineAndCharacterOfPosition(d.start ?? 0)
    // The nearest `// Kind/name` line above the error names the object.
    let at = line
    while (at > 0 && !sourceLines[at].startsWith('// ')) at--
    return `${sourceLines[at].slice(3)}: ${message}`
  })
}

// --- 3: Quartet's rules ----------------------------------------------------------------------

const SECRET_NAME = /SECRET|PASSWORD|TOKEN|API_KEY|PRIVATE|HASH|CREDENTIAL|DATABASE_URL|REDIS_URL|SMTP_URL/i

function podSpecs(objects) {
  return objects
    .filter((o) => ['Deployment', 'Job', 'StatefulSet', 'DaemonSet'].includes(o.kind))
    .map((o) => ({ owner: o, spec: o.spec?.template?.spec ?? {} }))
}

function selects(selector, labels) {
  const want = selector?.matchLabels ?? selector ?? {}
  return Object.keys(want).length > 0 && Object.entries(want).every(([k, v]) => labels?.[k] === v)
}

function ruleErrors(objects, { production }) {
  const errors = []
  const fail = (o, message) => errors.push(`${label(o)}: ${message}`)
  const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('quartet-config'))
  const shutdownMs = Number(config?.data?.SHUTDOWN_TIMEOUT_MS ?? 10_000)

  for (const o of objects) {
    if (o.kind === 'Secret' && (o.data || o.stringData))
      fail(o, 'a Secret with values in the manifests; reference a Secret the operator creates')
    if (o.kind === 'ConfigMap')
      for (const key of Object.keys(o.data ?? {}))
        if (SECRET_NAME.test(key)) fail(o, `${key} looks secret; it belongs in a Secret`)
  }

  for (const { owner, spec } of podSpecs(objects)) {
    const fail2 = (m) => fail(owner, m)
    if (spec.securityContext?.runAsNonRoot !== true) fail2('pod securityContext.runAsNonRoot must be true')
    if (spec.securityContext?.runAsUser === 0) fail2('runAsUser 0 is root')
    for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) {
      const sc = c.securityContext ?? {}
      if (sc.readOnlyRootFilesystem !== true) fail2(`${c.name}: readOnlyRootFilesystem must be true`)
      if (sc.allowPrivilegeEscalation !== false) fail2(`${c.name}: allowPrivilegeEscalation must be false`)
      if (!sc.capabilities?.drop?.includes('ALL')) fail2(`${c.name}: capabilities must drop ALL`)
      if (sc.runAsNonRoot === false || sc.privileged) fail2(`${c.name}: must not run as root or privileged`)
      const r = c.resources ?? {}
      if (!r.requests?.cpu || !r.requests?.memory) fail2(`${c.name}: resources.requests needs cpu and memory`)
      if (!r.limits?.memory) fail2(`${c.name}: resources.limits needs memory`)
      for (const e of c.env ?? [])
        if (e.value !== undefined && SECRET_NAME.test(e.name))
          fail2(`${c.name}: ${e.name} is inline; take it from a Secret (secretKeyRef or envFrom)`)
      const [, tag] = /:([^:/@]+)$/.exec(c.image ?? '') ?? []
      if (production && (!tag || tag === 'latest') && !c.image?.includes('@sha256:'))
        fail2(`${c.name}: image ${c.image} is not pinned to a version`)
    }
    if (owner.kind !== 'Deployment') continue
    const main = spec.containers?.[0] ?? {}
    if (main.livenessProbe?.httpGet?.path !== '/healthz') fail2('livenessProbe must GET /healthz')
    if (main.readinessProbe?.httpGet?.path !== '/readyz') fail2('readinessProbe must GET /readyz')
    const pause = Number(
      main.lifecycle?.preStop?.sleep?.seconds ?? main.lifecycle?.preStop?.exec?.command?.at(-1) ?? NaN,
    )
    if (!(pause > 0)) fail2('a preStop pause (sleep) must let endpoints drop the pod before SIGTERM')
    const grace = spec.terminationGracePeriodSeconds ?? 30
    if (grace * 1000 <= shutdownMs + (pause > 0 ? pause * 1000 : 0))
      fail2(
        `terminationGracePeriodSeconds ${grace} must exceed the preStop pause plus SHUTDOWN_TIMEOUT_MS (${shutdownMs} ms)`,
      )
    const labels = owner.spec?.template?.metadata?.labels
    const named = (kind, test) => objects.some((x) => x.kind === kind && test(x))
    if (!named('Service', (s) => selects(s.spec?.selector, labels))) fail2('no Service selects its pods')
    if (!named('PodDisruptionBudget', (p) => selects(p.spec?.selector, labels)))
      fail2('no PodDisruptionBudget covers its pods')
    if (!named('NetworkPolicy', (n) => selects(n.spec?.podSelector, labels)))
      fail2('no NetworkPolicy restricts who reaches its pods')
    if (
      !named(
        'HorizontalPodAutoscaler',
        (h) =>
          h.spec?.scaleTargetRef?.kind === 'Deployment' && h.spec.scaleTargetRef.name === owner.metadata.name,
      )
    )
      fail2('no HorizontalPodAutoscaler scales it')
  }

  for (const ing of objects.filter((o) => o.kind === 'Ingress'))
    for (const rule of ing.spec?.rules ?? [])
      for (const p of rule.http?.paths ?? []) {
        const name = p.backend?.service?.name
        if (!objects.some((o) => o.kind === 'Service' && o.metadata.name === name))
          fail(ing, `${rule.host}: backend Service ${name} does not exist`)
      }
  if (!objects.some((o) => o.kind === 'Ingress'))
    errors.push('no Ingress routes the host names to the services')
  return errors
}

async function check(objects, target) {
  return [...(await schemaErrors(objects)), ...unknownFieldErrors(objects), ...ruleErrors(objects, target)]
}

// --- main --------------------------------------------------------------------------------------

async function validateAll() {
  let failed = false
  for (const target of TARGETS) {
    const objects = render(target)
    const errors = await check(objects, target)
    const kinds = [...new Set(objects.map((o) => o.kind))].sort().join(', ')
    if (errors.length) {
      failed = true
      console.error(`✗ ${target.name}: ${errors.length} problem(s)\n  ${errors.join('\n  ')}`)
    } else console.log(`✓ ${target.name}: ${objects.length} objects valid (${kinds})`)
  }
  if (failed) process.exit(1)
}

/** Each break of a valid render must be caught, by the check it names. */
const BREAKS = [
  [
    'a misspelt field',
    (os) => (deployment(os).spec.template.spec.containers[0].readinesProbe = {}),
    /readinesProbe/,
  ],
  ['a wrong type', (os) => (deployment(os).spec.replicas = 'two'), /replicas/],
  ['a missing required field', (os) => delete deployment(os).spec.selector, /selector/],
  [
    'an unknown kind',
    (os) => os.push({ apiVersion: 'apps/v1', kind: 'Deploymnt', metadata: { name: 'x' } }),
    /no schema/,
  ],
  ['root', (os) => (deployment(os).spec.template.spec.securityContext.runAsNonRoot = false), /runAsNonRoot/],
  [
    'a writable root filesystem',
    (os) => (container(os).securityContext.readOnlyRootFilesystem = false),
    /readOnlyRootFilesystem/,
  ],
  ['no readiness probe', (os) => delete container(os).readinessProbe, /readinessProbe/],
  ['no resources', (os) => delete container(os).resources, /resources/],
  ['no preStop', (os) => delete container(os).lifecycle, /preStop/],
  [
    'a short grace period',
    (os) => (deployment(os).spec.template.spec.terminationGracePeriodSeconds = 10),
    /terminationGracePeriodSeconds/,
  ],
  [
    'an inline secret',
    (os) => container(os).env.push({ name: 'DATABASE_URL', value: 'postgresql://u:p@db/q' }),
    /inline/,
  ],
  [
    'a Secret with data',
    (os) => os.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { A: 'b' } }),
    /Secret with values/,
  ],
  [
    'no NetworkPolicy',
    (os) =>
      os.splice(
        os.findIndex((o) => o.kind === 'NetworkPolicy'),
        1,
      ),
    /NetworkPolicy/,
  ],
  [
    'a dangling Ingress backend',
    (os) => (os.find((o) => o.kind === 'Ingress').spec.rules[0].http.paths[0].backend.service.name = 'nope'),
    /nope/,
  ],
  [
    'an unpinned image in production',
    (os) => (container(os).image = 'ghcr.io/quartet/key-info:latest'),
    /not pinned/,
  ],
]
const deployment = (os) => os.find((o) => o.kind === 'Deployment')
const container = (os) => deployment(os).spec.template.spec.containers[0]

async function selfTest() {
  const target = TARGETS[1]
  const valid = render(target)
  const baseline = await check(valid, target)
  if (baseline.length)
    throw new Error(`the production render is not valid to begin with:\n${baseline.join('\n')}`)
  let missed = 0
  for (const [what, breakIt, expected] of BREAKS) {
    const objects = JSON.parse(JSON.stringify(valid))
    breakIt(objects)
    const errors = await check(objects, target)
    const caught = errors.some((e) => expected.test(e))
    if (!caught) missed++
    console.log(
      `${caught ? '✓' : '✗'} ${what}: ${caught ? errors.find((e) => expected.test(e)) : `not caught (${errors.join('; ') || 'no error'})`}`,
    )
  }
  if (missed) {
    console.error(`${missed} break(s) not caught`)
    process.exit(1)
  }
}

try {
  execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' })
} catch {
  console.error('kubectl is not installed (Debian: kubectl); it renders the kustomizations')
  process.exit(1)
}
if (process.argv.includes('--self-test')) await selfTest()
else await validateAll()
