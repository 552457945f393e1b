import { adminEn, adminZh } from './admin/strings.ts'
import { e2eEn, e2eZh } from './i18n-e2e.ts'
import { passwordEn, passwordZh } from './i18n-password.ts'
import { textShareEn, textShareZh } from './i18n-text.ts'

/** English and Simplified Chinese. The browser's languages choose by default; the switch is remembered. */
export type Lang = 'en' | 'zh-CN'

export const LANGS: Array<{ id: Lang; label: string }> = [
  { id: 'en', label: 'English' },
  { id: 'zh-CN', label: '简体中文' },
]

const en = {
  ...textShareEn,
  ...passwordEn,
  ...e2eEn,
  'app.name': 'Pickup Share',
  'nav.send': 'Send',
  'nav.pickup': 'Pick up',
  'nav.admin': 'Admin',
  'nav.label': 'Main',
  'lang.label': 'Language',
  skip: 'Skip to content',
  'common.loading': 'Loading…',
  'common.copy': 'Copy',
  'common.copied': 'Copied',
  'common.copyFailed': 'Copy failed: select the text and copy it',
  'common.error': 'Something went wrong: {message}',
  'common.network': 'The server could not be reached. Check your connection and try again.',
  'common.unlimited': 'unlimited',
  'common.never': '—',

  'send.title': 'Send files',
  'send.intro': 'Upload files and get a pickup code to share with the receiver.',
  'send.files': 'Files',
  'send.drop': 'Drag files here, or',
  'send.choose': 'choose files',
  'send.chosen': '{count} file(s), {size}',
  'send.remove': 'Remove {name}',
  'send.none': 'No files chosen yet.',
  'send.store': 'Storage',
  'store.blob': 'Server disk',
  'store.bucket': 'Object storage (S3)',
  'store.repo': 'Git repository',
  'send.expireDays': 'Expires after (days)',
  'send.expireHint': '1 to {max} days',
  'send.maxDownloads': 'Maximum downloads',
  'send.maxDownloadsHint': '1 to {max}',
  'send.unlimited': 'Unlimited mode',
  'send.unlimitedHint': 'Needs an authorization code from the administrator.',
  'send.unlimitedDownloads': 'Unlimited downloads',
  'send.noSizeLimit': 'No file size limit',
  'send.authCode': 'Authorization code',
  'send.submit': 'Upload and share',
  'send.uploading': 'Uploading…',
  'send.sharing': 'Creating the share…',
  'send.waiting': 'waiting',
  'send.done': 'done',
  'send.failed': 'failed',
  'send.progress': 'Upload progress of {name}',
  'send.rate': '{speed}/s · {left} left',
  'send.resumes': 'Resumes where it stopped.',
  'send.cancel': 'Cancel the upload of {name}',
  'send.tooLarge': '{name} is larger than the limit of {max}.',
  'send.needFiles': 'Choose at least one file, or enter a text.',
  'send.needAuthCode': 'Enter the authorization code for unlimited mode.',
  'send.rangeError': 'Enter a whole number from {min} to {max}.',
  'send.maxSize': 'Up to {max} per file.',
  'send.resultTitle': 'Your files are ready',
  'send.resultCode': 'Pickup code',
  'send.resultLink': 'Pickup link',
  'send.copyCode': 'Copy code',
  'send.copyLink': 'Copy link',
  'send.qr': 'QR code of the pickup link',
  'send.resultInfo': 'Expires {expires}. Downloads allowed: {downloads}.',
  'send.again': 'Send more files',

  'pickup.title': 'Pick up files',
  'pickup.intro': 'Enter the {length}-digit pickup code you were given.',
  'pickup.code': 'Pickup code',
  'pickup.submit': 'Open',
  'pickup.checking': 'Checking…',
  'pickup.badFormat': 'A pickup code is {length} digits.',
  'pickup.notFound':
    'No share has this code. Check the digits: codes also stop working once they expire or are used up.',
  'pickup.linkNotFound':
    'This pickup link opens nothing: the share expired, its downloads are used up, or it was deleted.',
  'pickup.exhausted': 'This share is used up: no downloads are left.',
  'pickup.gone': 'This file can no longer be downloaded: the share expired or its downloads are used up.',
  'pickup.rateLimited': 'Too many wrong codes from your network. Try again in {wait}.',
  'pickup.throttled':
    'Many wrong codes are being tried on this service right now, so codes are checked slowly. Try again in {wait}, or open the pickup link you were sent.',
  'pickup.files': 'Files',
  'pickup.name': 'Name',
  'pickup.size': 'Size',
  'pickup.download': 'Download',
  'pickup.downloadName': 'Download {name}',
  'pickup.remaining': 'Downloads left',
  'pickup.expires': 'Expires',
  'pickup.another': 'Another code',

  'admin.title': 'Administration',
  'admin.login': 'Log in',
  'admin.password': 'Password',
  'admin.loggingIn': 'Logging in…',
  'admin.wrongPassword': 'Wrong password.',
  'admin.disabled': 'The admin area is disabled: no admin password is configured.',
  'admin.tooMany': 'Too many attempts. Try again in {wait}.',
  'admin.logout': 'Log out',
  'admin.sessionEnded': 'Your session ended. Log in again.',
  'admin.tabs': 'Admin sections',
  'admin.tab.shares': 'Shares',
  'admin.tab.settings': 'Settings',
  'admin.tab.codes': 'Authorization codes',
  'admin.tab.stores': 'Storage',
  'admin.tab.audit': 'Audit log',

  'shares.search': 'Search by code or file name',
  'shares.status': 'Status',
  'shares.status.all': 'All',
  'shares.status.active': 'Active',
  'shares.status.exhausted': 'Used up',
  'shares.status.expired': 'Expired',
  'shares.code': 'Code',
  'shares.files': 'Files',
  'shares.size': 'Size',
  'shares.created': 'Created',
  'shares.expires': 'Expires',
  'shares.downloads': 'Downloads left',
  'shares.actions': 'Actions',
  'shares.delete': 'Delete',
  'shares.deleteLabel': 'Delete share {code}',
  'shares.confirmDelete': 'Delete share {code} and its files? This cannot be undone.',
  'shares.deleted': 'Share {code} deleted.',
  'shares.empty': 'No shares match.',
  'shares.cleanup': 'Clean up orphan files',
  'shares.cleanupResult':
    'Cleanup removed {files} file(s) and freed {size}, and {partials} partial upload(s) ({partialSize}).',
  'shares.page': 'Page {page} of {pages} ({total} shares)',
  'shares.prev': 'Previous page',
  'shares.next': 'Next page',
  'shares.refresh': 'Refresh',

  'settings.save': 'Save settings',
  'settings.saved': 'Settings saved.',
  'settings.invalid': 'Some values are not valid; nothing was saved.',
  'settings.defaultExpireDays': 'Default expiry (days)',
  'settings.maxExpireDays': 'Maximum expiry (days)',
  'settings.defaultMaxDownloads': 'Default maximum downloads',
  'settings.maxDownloadsCap': 'Highest maximum downloads',
  'settings.maxFileSizeBytes': 'Maximum file size (bytes)',
  'settings.codeLength': 'Pickup code length (digits)',
  'settings.unlimitedEnabled': 'Allow unlimited mode with authorization codes',
  'settings.takeFailuresPerIp': 'Wrong codes allowed per address',
  'settings.takeFailuresGlobal': 'Wrong codes allowed from everyone',
  'settings.takeFailureWindowSeconds': 'Wrong-code window (seconds)',
  'settings.guessThrottlePerMinute': 'Code checks per minute once everyone’s budget is spent',
  'settings.loginAttemptsPerIp': 'Failed logins allowed per address',
  'settings.loginWindowSeconds': 'Login window (seconds)',
  'settings.loginFailuresPerAccount': 'Failed logins per account before logins slow down',
  'settings.loginFailuresGlobal': 'Failed logins of everyone before logins slow down',
  'settings.loginBackoffMaxSeconds': 'Longest wait between slowed logins (seconds)',
  'settings.limits': 'Share limits',
  'settings.guessing': 'Guessing and login limits',

  'codes.create': 'Create authorization code',
  'codes.scope': 'Scope',
  'codes.scope.downloads': 'Unlimited downloads',
  'codes.scope.size': 'No size limit',
  'codes.scope.both': 'Both',
  'codes.hours': 'Valid for (hours)',
  'codes.note': 'Note (optional)',
  'codes.noteCol': 'Note',
  'codes.created': 'New code (shown only once):',
  'codes.hint': 'Code',
  'codes.status': 'Status',
  'codes.status.unused': 'Unused',
  'codes.status.used': 'Used',
  'codes.status.expired': 'Expired',
  'codes.status.revoked': 'Revoked',
  'codes.createdAt': 'Created',
  'codes.expiresAt': 'Expires',
  'codes.usedBy': 'Used by share',
  'codes.revoke': 'Revoke',
  'codes.revokeLabel': 'Revoke code {hint}',
  'codes.confirmRevoke': 'Revoke code {hint}? It can no longer be used.',
  'codes.revoked': 'Code revoked.',
  'codes.empty': 'No authorization codes yet.',

  'stores.empty': 'No storage instances.',
  'stores.unavailable': 'This server does not report storage instances.',
  'stores.usage': '{used} used of {quota} ({percent})',
  'stores.usageNoQuota': '{used} used, no quota',
  'stores.reserved': '{reserved} reserved for uploads in progress',
  'stores.disabled': 'disabled',

  'audit.at': 'When',
  'audit.action': 'Action',
  'audit.actor': 'Who',
  'audit.ip': 'Address',
  'audit.target': 'Target',
  'audit.empty': 'No entries.',
  // --- issue 20, pages helper (downloads, limits, uploads, messages, 404): keep this block together ---
  'pickup.downloadAll': 'Download all (.zip)',
  'pickup.downloadAllName': 'Download all {count} files as one .zip',
  'pickup.countRule':
    'Each file you download counts as one download. “Download all” takes every file as one .zip for a single download.',
  'pickup.usedUp': 'This share is used up: all of its downloads were taken.',
  'pickup.expired': 'This share expired on {date}.',
  'pickup.starting': 'Starting…',
  'pickup.started': 'The download of {name} has started.',
  'pickup.downloadFailed': '{name} could not be downloaded. {reason}',
  'send.countRule':
    'Each file downloaded counts as one download; the receiver can also take every file as one .zip for a single download.',
  'send.cancelAll': 'Cancel all uploads',
  'send.checkingCode': 'Checking the authorization code…',
  'send.cancelled': 'The uploads were cancelled.',
  'notFound.title': 'Page not found',
  'notFound.text': 'There is no page at this address. Check the address, or go to one of these pages:',
  'error.detail': ' ({code})',
  'error.network': 'The server could not be reached. Check your connection and try again.',
  'error.aborted': 'The transfer was cancelled.',
  'error.unknown': 'Something went wrong on the server. Please try again.',
  'error.bad_request': 'The request was not valid. Check what you entered.',
  'error.unauthorized': 'You are not signed in, or your session has ended.',
  'error.forbidden': 'This is not allowed.',
  'error.csrf_rejected': 'The request was refused because it did not come from this site. Reload the page.',
  'error.not_found': 'Not found.',
  'error.method_not_allowed': 'This action is not supported here.',
  'error.request_timeout': 'The request took too long. Try again.',
  'error.conflict': 'This conflicts with a change made meanwhile. Reload and try again.',
  'error.gone': 'This is no longer available.',
  'error.payload_too_large': 'What was sent is too large.',
  'error.unsupported_media_type': 'The data was sent in a form the server does not accept.',
  'error.unprocessable_entity': 'The request could not be processed.',
  'error.rate_limit_exceeded': 'Too many attempts. Wait a moment and try again.',
  'error.header_fields_too_large': 'The request headers are too large.',
  'error.internal_error': 'Something went wrong on the server. Please try again.',
  'error.bad_gateway': 'A service behind this site failed. Try again later.',
  'error.service_unavailable': 'The service is busy or a part of it is down. Try again in a moment.',
  'error.share_not_found': 'No share has this code or link.',
  'error.share_used_up': 'This share is used up: all of its downloads were taken.',
  'error.share_expired': 'This share has expired.',
  'error.file_not_found': 'This file is not part of the share, or the storage no longer has it.',
  'error.store_unavailable': 'This storage is not available on this server.',
  'error.upload_token_invalid': 'The upload permission is not valid. Start the upload again.',
  'error.upload_token_expired': 'The upload permission has expired. Start the upload again.',
  'error.upload_exists': 'This file was already uploaded. Start again to upload it anew.',
  'error.file_too_large': 'The file is larger than allowed.',
  'error.range_not_satisfiable': 'The requested part of the file does not exist.',
  'error.upload_not_issued': 'An uploaded file is not known to this server. Upload the files again.',
  'error.upload_already_shared': 'A file is already part of another share. Upload the files again.',
  'error.upload_expired': 'The uploaded files are too old to share. Upload them again.',
  'error.upload_missing': 'An upload did not arrive completely. Upload the files again.',
  'error.size_mismatch': 'A file changed size while it was uploaded. Upload it again.',
  'error.unlimited_disabled': 'Unlimited mode is switched off on this server.',
  'error.auth_code_missing': 'Unlimited mode needs an authorization code.',
  'error.auth_code_invalid': 'The authorization code is not valid.',
  'error.auth_code_used': 'The authorization code was already used.',
  'error.auth_code_expired': 'The authorization code has expired.',
  'error.auth_code_revoked': 'The authorization code was revoked.',
  'error.auth_code_scope': 'The authorization code does not cover what you asked for.',
  'error.auth_code_not_found': 'There is no such authorization code.',
  'error.session_required': 'Please sign in again: your session has ended.',
  'error.invalid_password': 'The password is wrong.',
  'error.admin_disabled': 'The admin area is switched off on this server.',
  'error.settings_invalid': 'Some settings are not valid.',
  'error.storage_failed': 'The storage failed to deliver the file. Try again later.',
  'error.store_full': 'The storage is full. Try a smaller file or try again later.',
  'error.insufficient_storage': 'The storage has no room left.',
  'error.store_exists': 'A storage instance with this name already exists.',
  'error.store_builtin': 'Built-in storage instances cannot be changed this way.',
  'error.store_not_found': 'There is no such storage instance.',
  'error.store_in_use': 'This storage instance still holds files of live shares.',
  'error.preview_unavailable': 'This file cannot be previewed here. Download it instead.',

  // --- admin area, issue 20 (storage instances, phone layout, sizes, audit in words): admin/strings.ts
  ...adminEn,
}

export type Key = keyof typeof en

const zh: Record<Key, string> = {
  ...textShareZh,
  ...passwordZh,
  ...e2eZh,
  'app.name': '取件分享',
  'nav.send': '发送',
  'nav.pickup': '取件',
  'nav.admin': '管理',
  'nav.label': '主导航',
  'lang.label': '语言',
  skip: '跳到正文',
  'common.loading': '加载中…',
  'common.copy': '复制',
  'common.copied': '已复制',
  'common.copyFailed': '复制失败：请选中文字后手动复制',
  'common.error': '出错了：{message}',
  'common.network': '无法连接服务器，请检查网络后重试。',
  'common.unlimited': '不限',
  'common.never': '—',

  'send.title': '发送文件',
  'send.intro': '上传文件，获得取件码，把它交给接收人。',
  'send.files': '文件',
  'send.drop': '把文件拖到这里，或',
  'send.choose': '选择文件',
  'send.chosen': '{count} 个文件，共 {size}',
  'send.remove': '移除 {name}',
  'send.none': '尚未选择文件。',
  'send.store': '存储位置',
  'store.blob': '服务器磁盘',
  'store.bucket': '对象存储（S3）',
  'store.repo': 'Git 仓库',
  'send.expireDays': '有效期（天）',
  'send.expireHint': '1 至 {max} 天',
  'send.maxDownloads': '最多下载次数',
  'send.maxDownloadsHint': '1 至 {max}',
  'send.unlimited': '无限制模式',
  'send.unlimitedHint': '需要管理员提供的授权码。',
  'send.unlimitedDownloads': '不限下载次数',
  'send.noSizeLimit': '不限文件大小',
  'send.authCode': '授权码',
  'send.submit': '上传并分享',
  'send.uploading': '正在上传…',
  'send.sharing': '正在创建分享…',
  'send.waiting': '等待中',
  'send.done': '完成',
  'send.failed': '失败',
  'send.progress': '{name} 的上传进度',
  'send.rate': '{speed}/秒 · 剩余 {left}',
  'send.resumes': '将从中断处继续上传。',
  'send.cancel': '取消上传 {name}',
  'send.tooLarge': '{name} 超过了 {max} 的大小限制。',
  'send.needFiles': '请至少选择一个文件，或输入文字。',
  'send.needAuthCode': '无限制模式需要填写授权码。',
  'send.rangeError': '请输入 {min} 至 {max} 之间的整数。',
  'send.maxSize': '每个文件最大 {max}。',
  'send.resultTitle': '文件已就绪',
  'send.resultCode': '取件码',
  'send.resultLink': '取件链接',
  'send.copyCode': '复制取件码',
  'send.copyLink': '复制链接',
  'send.qr': '取件链接的二维码',
  'send.resultInfo': '{expires} 过期。可下载次数：{downloads}。',
  'send.again': '继续发送',

  'pickup.title': '取件',
  'pickup.intro': '请输入你收到的 {length} 位取件码。',
  'pickup.code': '取件码',
  'pickup.submit': '打开',
  'pickup.checking': '查询中…',
  'pickup.badFormat': '取件码是 {length} 位数字。',
  'pickup.notFound': '没有与此取件码对应的分享。请核对数字：取件码过期或次数用完后也会失效。',
  'pickup.linkNotFound': '此取件链接已无法打开：分享已过期、下载次数已用完或已被删除。',
  'pickup.exhausted': '此分享的下载次数已用完。',
  'pickup.gone': '该文件已无法下载：分享已过期或下载次数已用完。',
  'pickup.rateLimited': '你的网络输错取件码的次数过多，请 {wait} 后再试。',
  'pickup.throttled':
    '此服务正被大量尝试错误的取件码，核对会变慢。请 {wait} 后再试，或直接打开你收到的取件链接。',
  'pickup.files': '文件',
  'pickup.name': '名称',
  'pickup.size': '大小',
  'pickup.download': '下载',
  'pickup.downloadName': '下载 {name}',
  'pickup.remaining': '剩余下载次数',
  'pickup.expires': '过期时间',
  'pickup.another': '换一个取件码',

  'admin.title': '管理',
  'admin.login': '登录',
  'admin.password': '密码',
  'admin.loggingIn': '正在登录…',
  'admin.wrongPassword': '密码错误。',
  'admin.disabled': '管理区未启用：未配置管理员密码。',
  'admin.tooMany': '尝试次数过多，请 {wait} 后再试。',
  'admin.logout': '退出登录',
  'admin.sessionEnded': '会话已结束，请重新登录。',
  'admin.tabs': '管理分区',
  'admin.tab.shares': '分享',
  'admin.tab.settings': '设置',
  'admin.tab.codes': '授权码',
  'admin.tab.stores': '存储',
  'admin.tab.audit': '审计日志',

  'shares.search': '按取件码或文件名搜索',
  'shares.status': '状态',
  'shares.status.all': '全部',
  'shares.status.active': '有效',
  'shares.status.exhausted': '已用完',
  'shares.status.expired': '已过期',
  'shares.code': '取件码',
  'shares.files': '文件',
  'shares.size': '大小',
  'shares.created': '创建时间',
  'shares.expires': '过期时间',
  'shares.downloads': '剩余下载',
  'shares.actions': '操作',
  'shares.delete': '删除',
  'shares.deleteLabel': '删除分享 {code}',
  'shares.confirmDelete': '删除分享 {code} 及其文件？此操作无法撤销。',
  'shares.deleted': '分享 {code} 已删除。',
  'shares.empty': '没有匹配的分享。',
  'shares.cleanup': '清理孤立文件',
  'shares.cleanupResult':
    '清理完成：删除 {files} 个文件，释放 {size}；另删除 {partials} 个未完成的上传（{partialSize}）。',
  'shares.page': '第 {page} / {pages} 页（共 {total} 个分享）',
  'shares.prev': '上一页',
  'shares.next': '下一页',
  'shares.refresh': '刷新',

  'settings.save': '保存设置',
  'settings.saved': '设置已保存。',
  'settings.invalid': '部分数值无效，未保存任何更改。',
  'settings.defaultExpireDays': '默认有效期（天）',
  'settings.maxExpireDays': '最长有效期（天）',
  'settings.defaultMaxDownloads': '默认最多下载次数',
  'settings.maxDownloadsCap': '下载次数上限',
  'settings.maxFileSizeBytes': '单个文件大小上限（字节）',
  'settings.codeLength': '取件码位数',
  'settings.unlimitedEnabled': '允许使用授权码的无限制模式',
  'settings.takeFailuresPerIp': '每个地址允许的错误取件码次数',
  'settings.takeFailuresGlobal': '全体允许的错误取件码次数',
  'settings.takeFailureWindowSeconds': '错误取件码统计窗口（秒）',
  'settings.guessThrottlePerMinute': '全体次数用完后每分钟可核对的取件码数',
  'settings.loginAttemptsPerIp': '每个地址允许的登录失败次数',
  'settings.loginWindowSeconds': '登录统计窗口（秒）',
  'settings.loginFailuresPerAccount': '每个账户登录失败多少次后放慢登录',
  'settings.loginFailuresGlobal': '全体登录失败多少次后放慢登录',
  'settings.loginBackoffMaxSeconds': '放慢时两次登录之间的最长等待（秒）',
  'settings.limits': '分享限制',
  'settings.guessing': '猜码与登录限制',

  'codes.create': '创建授权码',
  'codes.scope': '范围',
  'codes.scope.downloads': '不限下载次数',
  'codes.scope.size': '不限文件大小',
  'codes.scope.both': '两者',
  'codes.hours': '有效时长（小时）',
  'codes.note': '备注（可选）',
  'codes.noteCol': '备注',
  'codes.created': '新授权码（仅显示一次）：',
  'codes.hint': '授权码',
  'codes.status': '状态',
  'codes.status.unused': '未使用',
  'codes.status.used': '已使用',
  'codes.status.expired': '已过期',
  'codes.status.revoked': '已撤销',
  'codes.createdAt': '创建时间',
  'codes.expiresAt': '过期时间',
  'codes.usedBy': '使用它的分享',
  'codes.revoke': '撤销',
  'codes.revokeLabel': '撤销授权码 {hint}',
  'codes.confirmRevoke': '撤销授权码 {hint}？撤销后无法再使用。',
  'codes.revoked': '授权码已撤销。',
  'codes.empty': '还没有授权码。',

  'stores.empty': '没有存储实例。',
  'stores.unavailable': '此服务器不提供存储实例信息。',
  'stores.usage': '已用 {used} / 配额 {quota}（{percent}）',
  'stores.usageNoQuota': '已用 {used}，无配额',
  'stores.reserved': '{reserved} 为进行中的上传预留',
  'stores.disabled': '已停用',

  'audit.at': '时间',
  'audit.action': '操作',
  'audit.actor': '操作者',
  'audit.ip': '地址',
  'audit.target': '对象',
  'audit.empty': '没有记录。',
  // --- issue 20, pages helper (downloads, limits, uploads, messages, 404): keep this block together ---
  'pickup.downloadAll': '全部下载（.zip）',
  'pickup.downloadAllName': '将全部 {count} 个文件打包为一个 .zip 下载',
  'pickup.countRule': '每下载一个文件计为一次下载。“全部下载”把所有文件打包成一个 .zip，只计一次下载。',
  'pickup.usedUp': '此分享的下载次数已用完。',
  'pickup.expired': '此分享已于 {date} 过期。',
  'pickup.starting': '正在开始…',
  'pickup.started': '{name} 已开始下载。',
  'pickup.downloadFailed': '无法下载 {name}。{reason}',
  'send.countRule': '每下载一个文件计为一次下载；接收者也可以把所有文件打包成一个 .zip 下载，只计一次。',
  'send.cancelAll': '取消全部上传',
  'send.checkingCode': '正在检查授权码…',
  'send.cancelled': '上传已取消。',
  'notFound.title': '找不到页面',
  'notFound.text': '此地址没有页面。请检查地址，或前往以下页面：',
  'error.detail': '（{code}）',
  'error.network': '无法连接服务器。请检查网络后重试。',
  'error.aborted': '传输已取消。',
  'error.unknown': '服务器出错了，请重试。',
  'error.bad_request': '请求无效，请检查填写的内容。',
  'error.unauthorized': '你尚未登录，或会话已结束。',
  'error.forbidden': '不允许此操作。',
  'error.csrf_rejected': '请求被拒绝：它不是来自本站。请刷新页面。',
  'error.not_found': '未找到。',
  'error.method_not_allowed': '此处不支持该操作。',
  'error.request_timeout': '请求超时，请重试。',
  'error.conflict': '与期间的其他更改冲突。请刷新后重试。',
  'error.gone': '此内容已不可用。',
  'error.payload_too_large': '发送的内容太大。',
  'error.unsupported_media_type': '服务器不接受这种数据格式。',
  'error.unprocessable_entity': '无法处理该请求。',
  'error.rate_limit_exceeded': '尝试次数过多，请稍后再试。',
  'error.header_fields_too_large': '请求头太大。',
  'error.internal_error': '服务器出错了，请重试。',
  'error.bad_gateway': '本站依赖的服务出错了，请稍后再试。',
  'error.service_unavailable': '服务繁忙或部分组件不可用，请稍后再试。',
  'error.share_not_found': '没有与此取件码或链接对应的分享。',
  'error.share_used_up': '此分享的下载次数已用完。',
  'error.share_expired': '此分享已过期。',
  'error.file_not_found': '此文件不在分享中，或存储中已没有它。',
  'error.store_unavailable': '此服务器上没有启用该存储。',
  'error.upload_token_invalid': '上传许可无效，请重新上传。',
  'error.upload_token_expired': '上传许可已过期，请重新上传。',
  'error.upload_exists': '此文件已经上传过。请重新开始上传。',
  'error.file_too_large': '文件超过了大小限制。',
  'error.range_not_satisfiable': '请求的文件部分不存在。',
  'error.upload_not_issued': '服务器不认识某个已上传的文件，请重新上传。',
  'error.upload_already_shared': '某个文件已属于另一个分享，请重新上传。',
  'error.upload_expired': '已上传的文件太旧，无法分享，请重新上传。',
  'error.upload_missing': '有文件没有完整上传，请重新上传。',
  'error.size_mismatch': '上传期间文件大小发生了变化，请重新上传。',
  'error.unlimited_disabled': '此服务器已关闭无限制模式。',
  'error.auth_code_missing': '无限制模式需要授权码。',
  'error.auth_code_invalid': '授权码无效。',
  'error.auth_code_used': '授权码已被使用。',
  'error.auth_code_expired': '授权码已过期。',
  'error.auth_code_revoked': '授权码已被撤销。',
  'error.auth_code_scope': '授权码不包含你请求的权限。',
  'error.auth_code_not_found': '没有这个授权码。',
  'error.session_required': '会话已结束，请重新登录。',
  'error.invalid_password': '密码错误。',
  'error.admin_disabled': '此服务器已关闭管理后台。',
  'error.settings_invalid': '部分设置无效。',
  'error.storage_failed': '存储未能提供该文件，请稍后再试。',
  'error.store_full': '存储空间已满。请换较小的文件或稍后再试。',
  'error.insufficient_storage': '存储已没有剩余空间。',
  'error.store_exists': '已有同名的存储实例。',
  'error.store_builtin': '内置存储实例不能这样修改。',
  'error.store_not_found': '没有这个存储实例。',
  'error.store_in_use': '此存储实例仍保存着有效分享的文件。',
  'error.preview_unavailable': '此文件无法在这里预览，请下载查看。',

  // --- admin area, issue 20: admin/strings.ts
  ...adminZh,
}

const tables: Record<Lang, Record<Key, string>> = { en, 'zh-CN': zh }
const STORAGE_KEY = 'pickup-share.lang'

export function initialLang(): Lang {
  try {
    const saved = localStorage.getItem(STORAGE_KEY)
    if (saved === 'en' || saved === 'zh-CN') return saved
  } catch {
    // storage blocked: follow the browser
  }
  for (const l of navigator.languages ?? [navigator.language]) {
    const lower = l.toLowerCase()
    if (lower.startsWith('zh')) return 'zh-CN'
    if (lower.startsWith('en')) return 'en'
  }
  return 'en'
}

let current: Lang = 'en'

export function setLang(lang: Lang, remember: boolean): void {
  current = lang
  document.documentElement.lang = lang
  if (remember)
    try {
      localStorage.setItem(STORAGE_KEY, lang)
    } catch {
      // not remembered; fine
    }
}

export const lang = (): Lang => current

export function t(key: Key, params: Record<string, string | number> = {}): string {
  const text = tables[current][key] ?? en[key]
  return text.replace(/\{(\w+)\}/g, (_, name: string) => String(params[name] ?? `{${name}}`))
}

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB']

/** A duration in seconds, rounded up, as the reader's language writes it: `45 s`, `3 min 5 s`, `2 h 10 min`. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.ceil(seconds))
  const zh = lang() === 'zh-CN'
  const [h, m, sec] = [Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60]
  if (zh) return h ? `${h} 小时 ${m} 分` : m ? `${m} 分 ${sec} 秒` : `${sec} 秒`
  return h ? `${h} h ${m} min` : m ? `${m} min ${sec} s` : `${sec} s`
}

export function formatBytes(bytes: number): string {
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024
    unit++
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1
  return `${new Intl.NumberFormat(current, { maximumFractionDigits: digits }).format(value)} ${UNITS[unit]}`
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return t('common.never')
  return new Intl.DateTimeFormat(current, { dateStyle: 'medium', timeStyle: 'short' }).format(new Date(iso))
}

export function formatPercent(part: number, whole: number): string {
  return new Intl.NumberFormat(current, { style: 'percent', maximumFractionDigits: 1 }).format(
    whole > 0 ? part / whole : 0,
  )
}

export function formatWait(seconds: number): string {
  const rtf = new Intl.NumberFormat(current)
  if (current === 'zh-CN')
    return seconds >= 60 ? `${rtf.format(Math.ceil(seconds / 60))} 分钟` : `${rtf.format(seconds)} 秒`
  return seconds >= 60
    ? `${rtf.format(Math.ceil(seconds / 60))} minute${Math.ceil(seconds / 60) === 1 ? '' : 's'}`
    : `${rtf.format(seconds)} second${seconds === 1 ? '' : 's'}`
}

/** The messages of a language (tests check that every server error code has one in each). */
export const messagesOf = (l: Lang): Readonly<Record<Key, string>> => tables[l]
