// Issue 25 (text shares, paste, previews): its strings, spread into both tables (i18n-en.ts, i18n-zh-cn.ts).

export const textShareEn = {
  'text.label': 'Text',
  'text.hint':
    'Type or paste text to share it as a text file (up to {max}). Ctrl+V anywhere on this page also pastes images and files.',
  'text.placeholder': 'A password, a link, an address, a snippet…',
  'text.size': '{size} of {max}',
  'text.tooLarge': 'The text is {size}: at most {max} can be sent from this page. Send it as a file instead.',
  'text.pasted': 'Pasted {count} file(s) from the clipboard.',
  'text.fileName': 'text',
  'text.badge': 'Text',
  'text.adminBadge': 'text share',

  'preview.title': 'Preview of {name}',
  'preview.note':
    'Showing a file counts as your download of it; downloading it afterwards from this device is free.',
  'preview.show': 'Show',
  'preview.showName': 'Show {name} (counts as your download of it)',
  'preview.loading': 'Loading the preview…',
  'preview.failed': 'The preview could not be loaded: {message}',
  'preview.gone': 'This file can no longer be shown: the share expired or its downloads are used up.',
  'preview.broken': 'This file cannot be shown here; download it instead.',
  'preview.monospace': 'Monospace',
  'preview.copyText': 'Copy text',
  'preview.pdf': 'PDF document {name}',
  'preview.openPdf': 'Open the PDF in a new tab',

  'settings.previews': 'Previews',
  'settings.previewEnabled': 'Show text, images, audio, video and PDF on the pickup page',
  'settings.previewMaxBytes': 'Largest file shown as a preview (bytes)',
}

export const textShareZh: Record<keyof typeof textShareEn, string> = {
  'text.label': '文字',
  'text.hint':
    '输入或粘贴文字，作为文本文件分享（最多 {max}）。在本页任意位置按 Ctrl+V 也可以粘贴图片和文件。',
  'text.placeholder': '密码、链接、地址、代码片段……',
  'text.size': '{size} / {max}',
  'text.tooLarge': '这段文字有 {size}：本页最多可发送 {max}。请改为作为文件发送。',
  'text.pasted': '已从剪贴板粘贴 {count} 个文件。',
  'text.fileName': '文字',
  'text.badge': '文字',
  'text.adminBadge': '文字分享',

  'preview.title': '{name} 的预览',
  'preview.note': '显示一个文件即算作你对它的一次下载；之后在本设备上下载它不再计数。',
  'preview.show': '显示',
  'preview.showName': '显示 {name}（算作你对它的下载）',
  'preview.loading': '正在加载预览……',
  'preview.failed': '无法加载预览：{message}',
  'preview.gone': '这个文件已无法显示：分享已过期或下载次数已用完。',
  'preview.broken': '此文件无法在这里显示，请下载后查看。',
  'preview.monospace': '等宽字体',
  'preview.copyText': '复制文字',
  'preview.pdf': 'PDF 文档 {name}',
  'preview.openPdf': '在新标签页中打开 PDF',

  'settings.previews': '预览',
  'settings.previewEnabled': '在取件页面显示文字、图片、音频、视频和 PDF',
  'settings.previewMaxBytes': '可预览的最大文件（字节）',
}
