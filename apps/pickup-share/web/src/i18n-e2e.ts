// Issue 47 item 2 (end-to-end encrypted shares): its strings, spread into both tables (i18n-en.ts, i18n-zh-cn.ts).

export const e2eEn = {
  'e2e.legend': 'End-to-end encryption',
  'e2e.encrypt': 'Encrypt in this browser before uploading',
  'e2e.hint':
    'The files, their names and the text are encrypted here; the server only ever stores ciphertext. It still sees how many files there are, their sizes, when they are sent and fetched, and the addresses of sender and receivers.',
  'e2e.keyLink': 'Key in the link (whoever has the link can open it)',
  'e2e.keyPassphrase': 'Passphrase (the receiver types it with the code)',
  'e2e.passphrase': 'Passphrase',
  'e2e.passphraseHint':
    'At least 8 characters. Tell it to the receiver another way than the code; nobody can recover it.',
  'e2e.passphraseShort': 'A passphrase needs at least 8 characters.',
  'e2e.resultLink':
    'Encrypted end to end. The key is in the link only (after #): the code alone cannot open the files.',
  'e2e.resultPassphrase':
    'Encrypted end to end with your passphrase: the receiver needs the code (or link) and the passphrase.',

  'e2e.pickupNote':
    'This share is encrypted end to end: this page decrypts the files in your browser. The server cannot read them; it sees only their sizes, the times and the addresses.',
  'e2e.needLink':
    'This share is encrypted and its key travels in the pickup link only. Open the full link you were sent.',
  'e2e.passphrase.ask': 'This share is encrypted with a passphrase. Enter it to decrypt the files.',
  'e2e.passphraseWrong': 'That passphrase does not decrypt this share. Check it and try again.',
  'e2e.keyWrong': 'The key in this link does not decrypt this share. Check that the whole link was copied.',
  'e2e.decrypt': 'Decrypt',
  'e2e.deriving': 'Deriving the key…',
  'e2e.downloadAll': 'Download all, decrypted (.zip)',
  'e2e.zipCounts': 'The .zip is made in your browser from each file: it counts one download per file.',
  'e2e.countRule': 'Each file you download counts as one download, also when it comes inside the .zip.',
  'e2e.sendCountRule':
    'Each file downloaded counts as one download. Encrypted, the receiver’s .zip is made in their browser from each file, so it counts one download per file.',
  'e2e.noWorker':
    'This browser cannot decrypt a download as it streams (no service workers): use a current browser.',
  'e2e.failed': 'Decrypting {name} failed: {reason}',
  'e2e.badge': 'encrypted',
  'e2e.badgeLabel': 'Encrypted end to end in the sender’s browser',
}

export const e2eZh: Record<keyof typeof e2eEn, string> = {
  'e2e.legend': '端到端加密',
  'e2e.encrypt': '上传前在此浏览器中加密',
  'e2e.hint':
    '文件、文件名和文字都在这里加密，服务器只保存密文。服务器仍能看到文件个数、大小、发送和取件的时间，以及发送人和接收人的地址。',
  'e2e.keyLink': '密钥放在链接中（拿到链接的人即可打开）',
  'e2e.keyPassphrase': '口令（接收人与取件码一起输入）',
  'e2e.passphrase': '口令',
  'e2e.passphraseHint': '至少 8 个字符。请通过取件码以外的方式告诉对方；口令无法找回。',
  'e2e.passphraseShort': '口令至少需要 8 个字符。',
  'e2e.resultLink': '已端到端加密。密钥只在链接中（# 之后）：仅凭取件码无法打开文件。',
  'e2e.resultPassphrase': '已用你的口令端到端加密：接收人需要取件码（或链接）和口令。',

  'e2e.pickupNote':
    '此分享已端到端加密：本页面在你的浏览器中解密文件。服务器无法读取内容，只能看到大小、时间和地址。',
  'e2e.needLink': '此分享已加密，密钥只在取件链接中。请打开对方发给你的完整链接。',
  'e2e.passphrase.ask': '此分享用口令加密。请输入口令以解密文件。',
  'e2e.passphraseWrong': '此口令无法解密该分享。请检查后重试。',
  'e2e.keyWrong': '此链接中的密钥无法解密该分享。请确认复制了完整的链接。',
  'e2e.decrypt': '解密',
  'e2e.deriving': '正在生成密钥…',
  'e2e.downloadAll': '全部下载（已解密，.zip）',
  'e2e.zipCounts': '此 .zip 在你的浏览器中由各个文件生成：每个文件各计一次下载。',
  'e2e.countRule': '每下载一个文件计为一次下载，放在 .zip 中下载也一样。',
  'e2e.sendCountRule':
    '每下载一个文件计为一次下载。加密后，接收人的 .zip 在其浏览器中由各个文件生成，因此每个文件各计一次下载。',
  'e2e.noWorker': '此浏览器无法边下载边解密（不支持 Service Worker）：请使用较新的浏览器。',
  'e2e.failed': '解密 {name} 失败：{reason}',
  'e2e.badge': '已加密',
  'e2e.badgeLabel': '已在发送人的浏览器中端到端加密',
}
