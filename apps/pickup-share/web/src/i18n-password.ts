// Issue 47 item 1 (password-protected shares): its strings, spread into both tables (i18n-en.ts, i18n-zh-cn.ts).

export const passwordEn = {
  'send.password': 'Password (optional)',
  'send.passwordHint':
    'The receiver must type it along with the code or link. Tell it to them another way than the code. It is not encryption: the server still stores the files as they are.',
  'send.passwordShort': 'A password needs at least {min} characters.',
  'send.passwordLong': 'A password can have at most {max} characters.',
  'send.passwordSpaces': 'A password cannot begin or end with a space or contain line breaks or tabs.',
  'send.protected': 'Protected by a password: the receiver needs it too.',

  'pickup.password': 'Password',
  'pickup.passwordHint': 'This share is protected by a password. Ask the sender for it.',
  'pickup.passwordRequired': 'Enter the password of this share.',
  'pickup.passwordWrong': 'That password is not right. Check it and try again.',
  'pickup.passwordLimited': 'Too many wrong passwords. Try again in {wait}.',
  'pickup.unlock': 'Open with password',

  'shares.protected': 'password',
  'shares.protectedLabel': 'Protected by a password',

  'settings.passwordFailuresPerIp': 'Wrong share passwords allowed per address',
  'settings.passwordFailuresPerShare': 'Wrong passwords allowed per share',
  'settings.passwordFailureWindowSeconds': 'Wrong-password window (seconds)',

  'error.share_password_required': 'This share is protected by a password: enter it to open the share.',
  'error.share_password_wrong': 'The password is not right for this share.',
}

export const passwordZh: Record<keyof typeof passwordEn, string> = {
  'send.password': '密码（可选）',
  'send.passwordHint':
    '接收人需要同时输入取件码（或打开链接）和此密码。请通过取件码以外的方式告诉对方。这不是加密：服务器仍按原样保存文件。',
  'send.passwordShort': '密码至少需要 {min} 个字符。',
  'send.passwordLong': '密码最多 {max} 个字符。',
  'send.passwordSpaces': '密码不能以空格开头或结尾，也不能包含换行或制表符。',
  'send.protected': '已设置密码：接收人还需要输入此密码。',

  'pickup.password': '密码',
  'pickup.passwordHint': '此分享受密码保护，请向发送人索取密码。',
  'pickup.passwordRequired': '请输入此分享的密码。',
  'pickup.passwordWrong': '密码不正确，请核对后重试。',
  'pickup.passwordLimited': '输错密码的次数过多，请 {wait} 后再试。',
  'pickup.unlock': '用密码打开',

  'shares.protected': '密码',
  'shares.protectedLabel': '受密码保护',

  'settings.passwordFailuresPerIp': '每个地址允许的错误分享密码次数',
  'settings.passwordFailuresPerShare': '每个分享允许的错误密码次数',
  'settings.passwordFailureWindowSeconds': '错误密码统计窗口（秒）',

  'error.share_password_required': '此分享受密码保护：请输入密码后打开。',
  'error.share_password_wrong': '此分享的密码不正确。',
}
