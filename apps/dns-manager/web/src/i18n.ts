/** English and Simplified Chinese. The browser's languages choose by default; the switch is remembered. */
export type Lang = 'en' | 'zh-Hans'
export const LANGS: Array<{ id: Lang; label: string }> = [
  { id: 'en', label: 'English' },
  { id: 'zh-Hans', label: '简体中文' },
]

const en = {
  'app.name': 'DNS Manager',
  skip: 'Skip to content',
  'lang.label': 'Language',
  'nav.label': 'Account',
  'nav.overview': 'Overview',
  'nav.register': 'Register',
  'nav.keys': 'API access',
  'nav.audit': 'Audit log',
  'nav.security': 'Password',
  'nav.signout': 'Sign out',
  'missing.title': 'Page not found',

  'common.loading': 'Loading…',
  'common.email': 'E-mail address',
  'common.password': 'Password',
  'common.cancel': 'Cancel',
  'common.edit': 'Edit',
  'common.delete': 'Delete',
  'common.actions': 'Actions',
  'common.copied': 'Copied',
  'common.copyFailed': 'Copy failed: select the text and copy it',
  'common.error': 'Something went wrong: {message}',
  'common.network': 'The server could not be reached. Check your connection and try again.',
  'common.tooMany': 'Too many attempts. Try again in {wait}.',
  'common.signedOut': 'Your session has ended. Sign in again.',
  'common.never': 'never',

  'signin.title': 'Sign in',
  'signin.submit': 'Sign in',
  'signin.wrong': 'The e-mail address or the password is wrong.',
  'signin.forgot': 'Forgot your password?',
  'signin.noAccount': 'No account yet? Sign up',

  'signup.title': 'Sign up',
  'signup.intro': 'We will send a link to this address. Open it to choose your password.',
  'signup.submit': 'Send the link',
  'signup.sent': 'If {email} can sign up, a mail with a link is on its way. Open it within 24 hours.',
  'signup.closed': 'Sign-up is closed on this service. Ask its operator for an account.',
  'signup.inviteOnly': 'Sign-up needs an invitation. Open the link from your invitation mail.',
  'signup.haveAccount': 'Already have an account? Sign in',

  'complete.signupTitle': 'Choose your password',
  'complete.resetTitle': 'Set a new password',
  'complete.for': 'For {email}',
  'complete.password': 'New password',
  'complete.passwordHint': 'At least 10 characters. A few unrelated words make a good one.',
  'complete.signupSubmit': 'Create my account',
  'complete.resetSubmit': 'Set the password',
  'complete.invalid': 'This link has been used or has expired.',
  'complete.again': 'Ask for a new one',
  'complete.resetDone': 'Your password is set, and every browser was signed out.',

  'reset.title': 'Reset your password',
  'reset.intro': 'We will send a link to set a new password to this address, if it has an account.',
  'reset.submit': 'Send the link',
  'reset.sent': 'If {email} has an account, a mail with a link is on its way. It works for one hour.',

  'overview.title': 'Overview',
  'overview.account': 'Account',
  'overview.balance': 'Balance',
  'overview.quota': 'Subdomains',
  'overview.quotaValue': '{used} of {total} used',
  'overview.subdomains': 'Your subdomains',
  'overview.register': 'Register a subdomain',
  'overview.none': 'You have no subdomain yet.',
  'overview.name': 'Name',
  'overview.status': 'Status',
  'overview.expires': 'Expires',
  'overview.renewal': 'Renewal',
  'overview.renewalValue': '{price}, from {date}',
  'status.active': 'active',
  'status.grace': 'grace period',
  'status.suspended': 'suspended',

  'register.title': 'Register a subdomain',
  'register.name': 'Name',
  'register.zone': 'Under',
  'register.price': '{price} for {term}',
  'register.checking': 'Checking…',
  'register.submit': 'Register',
  'register.quota': 'You have used all {total} subdomains of your quota.',
  'register.balance': 'Your balance ({balance}) does not cover the price.',
  'register.taken': 'This name is taken.',
  'register.reserved': 'This name is reserved.',
  'availability.available': '{name} is available.',
  'availability.taken': '{name} is taken.',
  'availability.reserved': '{name} is reserved.',

  'subdomain.title': 'Subdomain',
  'subdomain.notFound': 'There is no such subdomain on your account.',
  'subdomain.manage': 'Manage',
  'subdomain.renew': 'Renew ({price})',
  'subdomain.renewPlain': 'Renew',
  'subdomain.renewed': 'Renewed until {date}.',
  'subdomain.showZone': 'Show the zone file',
  'subdomain.hideZone': 'Hide the zone file',
  'subdomain.zoneFile': 'Zone file',
  'subdomain.delete': 'Delete this subdomain',
  'subdomain.confirmTitle': 'Delete {name}?',
  'subdomain.confirmText':
    '{name} and its {count} record(s) will be removed from DNS, and the name may go to someone else. This cannot be undone.',
  'subdomain.confirmYes': 'Delete it',

  'records.title': 'DNS records',
  'records.none': 'No records yet.',
  'records.add': 'Add a record',
  'records.edit': 'Edit the record',
  'records.editOne': 'Edit the {type} record {name}',
  'records.deleteOne': 'Delete the {type} record {name}',
  'records.type': 'Type',
  'records.save': 'Save',
  'records.added': 'The record was added.',
  'records.updated': 'The record was changed.',
  'records.deleted': 'The record was deleted.',
  'records.confirmDelete': 'Delete the {type} record {name} → {content}?',
  'field.name': 'Name',
  'field.content': 'Value',
  'field.ttl': 'TTL (seconds)',
  'field.priority': 'Priority',
  'field.weight': 'Weight',
  'field.port': 'Port',
  'field.flag': 'Flag',
  'field.tag': 'Tag',
  'hint.name': '@ for the subdomain itself, or a name under it (www, _acme-challenge)',
  'hint.content': 'The record’s value',
  'hint.content.A': 'An IPv4 address, such as 203.0.113.7',
  'hint.content.AAAA': 'An IPv6 address, such as 2001:db8::7',
  'hint.content.CNAME': 'The host name this name points to',
  'hint.content.MX': 'The mail server’s host name',
  'hint.content.TXT': 'Any text (SPF, verification codes…)',
  'hint.content.NS': 'A name server’s host name',
  'hint.content.SRV': 'The target host name',
  'hint.content.CAA': 'The value, such as letsencrypt.org',
  'hint.ttl': 'Empty: the default',
  'hint.priority': 'Lower is preferred',
  'hint.weight': 'Share among equal priorities',
  'hint.port': '1 to 65535',
  'hint.flag': '0, or 128 for critical',
  'hint.tag': 'issue, issuewild or iodef',

  'keys.title': 'API access',
  'keys.switch': 'API access',
  'keys.switchHelp':
    'When it is off, every API key of this account is refused (403 api_access_disabled). These pages keep working.',
  'keys.switchOn': 'on',
  'keys.switchOff': 'off',
  'keys.switchedOn': 'API access is on.',
  'keys.switchedOff': 'API access is off: the API refuses every key of this account.',
  'keys.list': 'API keys',
  'keys.none': 'No API keys.',
  'keys.create': 'Create an API key',
  'keys.key': 'API key',
  'keys.secret': 'Secret',
  'keys.scope': 'Kind',
  'keys.scopeFull': 'full',
  'keys.scopeAcme': 'ACME-only',
  'keys.scopeDyndns': 'dynamic DNS',
  'keys.allSubdomains': 'all my subdomains',
  'keys.acmeTitle': 'ACME-only key',
  'keys.acmeHelp':
    'For a certificate client (lego, certbot, acme.sh): it can only add and remove TXT records under _acme-challenge, nothing else.',
  'keys.acmeFor': 'For',
  'keys.acmeCreate': 'Create an ACME-only key',
  'keys.created': 'Created',
  'keys.lastUsed': 'Last used',
  'keys.regenerate': 'New secret',
  'keys.regenerateOne': 'New secret for {key}',
  'keys.revoke': 'Revoke',
  'keys.revokeOne': 'Revoke {key}',
  'keys.revoked': '{key} was revoked.',
  'keys.confirmRegenerate': 'Give {key} a new secret? The old secret stops working at once.',
  'keys.confirmRevoke': 'Revoke {key}? Programs using it stop working at once.',
  'keys.secretTitle': 'Your new secret',
  'keys.secretOnce': 'Copy the secret now: it is shown only this once.',
  'keys.copyKey': 'Copy the key',
  'keys.copySecret': 'Copy the secret',
  'keys.allowList': 'IP allow list',
  'keys.allowHelp':
    'When the list is not empty, the API answers only requests from these addresses. IPv4, IPv6 and CIDR ranges.',
  'keys.allowLabel': 'Addresses and ranges, one per line',
  'keys.yourIp': 'Your address now: {ip}',
  'keys.addMine': 'Add my address',
  'keys.saveList': 'Save the list',
  'keys.listSaved': 'The allow list was saved.',

  'audit.title': 'Audit log',
  'audit.intro': 'What the API and these pages did on your account, and from where.',
  'audit.when': 'When',
  'audit.what': 'Action',
  'audit.target': 'On',
  'audit.outcome': 'Outcome',
  'audit.via': 'Through',
  'audit.from': 'From',
  'audit.web': 'pages',
  'audit.api': 'API',
  'audit.more': 'Older entries',

  'security.title': 'Change your password',
  'security.current': 'Current password',
  'security.new': 'New password',
  'security.submit': 'Change the password',
  'security.wrong': 'The current password is wrong.',
  'security.changed': 'Your password was changed. Every other browser was signed out.',
}

export type Key = keyof typeof en

const zh: Record<Key, string> = {
  'app.name': 'DNS 管理',
  skip: '跳到正文',
  'lang.label': '语言',
  'nav.label': '账户',
  'nav.overview': '概览',
  'nav.register': '注册',
  'nav.keys': 'API 访问',
  'nav.audit': '审计日志',
  'nav.security': '密码',
  'nav.signout': '退出',
  'missing.title': '找不到该页面',

  'common.loading': '加载中…',
  'common.email': '电子邮件地址',
  'common.password': '密码',
  'common.cancel': '取消',
  'common.edit': '编辑',
  'common.delete': '删除',
  'common.actions': '操作',
  'common.copied': '已复制',
  'common.copyFailed': '复制失败：请选中文字后手动复制',
  'common.error': '出错了：{message}',
  'common.network': '无法连接服务器。请检查网络后重试。',
  'common.tooMany': '尝试次数过多，请在 {wait} 后重试。',
  'common.signedOut': '会话已结束，请重新登录。',
  'common.never': '永不',

  'signin.title': '登录',
  'signin.submit': '登录',
  'signin.wrong': '电子邮件地址或密码错误。',
  'signin.forgot': '忘记密码？',
  'signin.noAccount': '还没有账户？注册',

  'signup.title': '注册账户',
  'signup.intro': '我们会向该地址发送一个链接，打开它即可设置密码。',
  'signup.submit': '发送链接',
  'signup.sent': '如果 {email} 可以注册，一封带链接的邮件正在发送。请在 24 小时内打开。',
  'signup.closed': '本服务已关闭注册。请向运营者申请账户。',
  'signup.inviteOnly': '注册需要邀请。请打开邀请邮件中的链接。',
  'signup.haveAccount': '已有账户？登录',

  'complete.signupTitle': '设置密码',
  'complete.resetTitle': '设置新密码',
  'complete.for': '账户：{email}',
  'complete.password': '新密码',
  'complete.passwordHint': '至少 10 个字符。几个互不相关的词组合起来就很好。',
  'complete.signupSubmit': '创建账户',
  'complete.resetSubmit': '设置密码',
  'complete.invalid': '此链接已被使用或已过期。',
  'complete.again': '重新获取链接',
  'complete.resetDone': '密码已设置，所有浏览器均已退出登录。',

  'reset.title': '重置密码',
  'reset.intro': '如果该地址有账户，我们会向它发送一个设置新密码的链接。',
  'reset.submit': '发送链接',
  'reset.sent': '如果 {email} 有账户，一封带链接的邮件正在发送。链接一小时内有效。',

  'overview.title': '概览',
  'overview.account': '账户',
  'overview.balance': '余额',
  'overview.quota': '子域名',
  'overview.quotaValue': '已用 {used} / 共 {total}',
  'overview.subdomains': '你的子域名',
  'overview.register': '注册子域名',
  'overview.none': '你还没有子域名。',
  'overview.name': '名称',
  'overview.status': '状态',
  'overview.expires': '到期',
  'overview.renewal': '续期',
  'overview.renewalValue': '{price}，{date} 起可续',
  'status.active': '正常',
  'status.grace': '宽限期',
  'status.suspended': '已暂停',

  'register.title': '注册子域名',
  'register.name': '名称',
  'register.zone': '所属域名',
  'register.price': '{price} / {term}',
  'register.checking': '正在检查…',
  'register.submit': '注册',
  'register.quota': '你已用完全部 {total} 个子域名配额。',
  'register.balance': '你的余额（{balance}）不足以支付费用。',
  'register.taken': '该名称已被占用。',
  'register.reserved': '该名称为保留名称。',
  'availability.available': '{name} 可以注册。',
  'availability.taken': '{name} 已被占用。',
  'availability.reserved': '{name} 为保留名称。',

  'subdomain.title': '子域名',
  'subdomain.notFound': '你的账户下没有这个子域名。',
  'subdomain.manage': '管理',
  'subdomain.renew': '续期（{price}）',
  'subdomain.renewPlain': '续期',
  'subdomain.renewed': '已续期至 {date}。',
  'subdomain.showZone': '查看区域文件',
  'subdomain.hideZone': '隐藏区域文件',
  'subdomain.zoneFile': '区域文件',
  'subdomain.delete': '删除此子域名',
  'subdomain.confirmTitle': '删除 {name}？',
  'subdomain.confirmText':
    '{name} 及其 {count} 条记录将从 DNS 中移除，该名称之后可能被他人注册。此操作无法撤销。',
  'subdomain.confirmYes': '确认删除',

  'records.title': 'DNS 记录',
  'records.none': '还没有记录。',
  'records.add': '添加记录',
  'records.edit': '编辑记录',
  'records.editOne': '编辑 {type} 记录 {name}',
  'records.deleteOne': '删除 {type} 记录 {name}',
  'records.type': '类型',
  'records.save': '保存',
  'records.added': '记录已添加。',
  'records.updated': '记录已修改。',
  'records.deleted': '记录已删除。',
  'records.confirmDelete': '删除 {type} 记录 {name} → {content}？',
  'field.name': '主机记录',
  'field.content': '记录值',
  'field.ttl': 'TTL（秒）',
  'field.priority': '优先级',
  'field.weight': '权重',
  'field.port': '端口',
  'field.flag': '标志',
  'field.tag': '标签',
  'hint.name': '@ 表示子域名本身，或填写其下的名称（www、_acme-challenge）',
  'hint.content': '记录的值',
  'hint.content.A': 'IPv4 地址，例如 203.0.113.7',
  'hint.content.AAAA': 'IPv6 地址，例如 2001:db8::7',
  'hint.content.CNAME': '指向的主机名',
  'hint.content.MX': '邮件服务器的主机名',
  'hint.content.TXT': '任意文本（SPF、验证码等）',
  'hint.content.NS': '域名服务器的主机名',
  'hint.content.SRV': '目标主机名',
  'hint.content.CAA': '值，例如 letsencrypt.org',
  'hint.ttl': '留空则使用默认值',
  'hint.priority': '数值越小越优先',
  'hint.weight': '同优先级之间的分配比例',
  'hint.port': '1 到 65535',
  'hint.flag': '0，或 128 表示关键',
  'hint.tag': 'issue、issuewild 或 iodef',

  'keys.title': 'API 访问',
  'keys.switch': 'API 访问',
  'keys.switchHelp': '关闭后，此账户的所有 API 密钥都会被拒绝（403 api_access_disabled）。这些页面仍可使用。',
  'keys.switchOn': '开启',
  'keys.switchOff': '关闭',
  'keys.switchedOn': 'API 访问已开启。',
  'keys.switchedOff': 'API 访问已关闭：API 将拒绝此账户的所有密钥。',
  'keys.list': 'API 密钥',
  'keys.none': '没有 API 密钥。',
  'keys.create': '创建 API 密钥',
  'keys.key': 'API 密钥',
  'keys.secret': '密钥私钥',
  'keys.scope': '类型',
  'keys.scopeFull': '完整',
  'keys.scopeAcme': '仅限 ACME',
  'keys.scopeDyndns': '动态 DNS',
  'keys.allSubdomains': '我的全部子域名',
  'keys.acmeTitle': '仅限 ACME 的密钥',
  'keys.acmeHelp':
    '供证书客户端（lego、certbot、acme.sh）使用：只能添加和删除 _acme-challenge 下的 TXT 记录，不能做其他操作。',
  'keys.acmeFor': '用于',
  'keys.acmeCreate': '创建仅限 ACME 的密钥',
  'keys.created': '创建于',
  'keys.lastUsed': '最近使用',
  'keys.regenerate': '重新生成私钥',
  'keys.regenerateOne': '为 {key} 重新生成私钥',
  'keys.revoke': '吊销',
  'keys.revokeOne': '吊销 {key}',
  'keys.revoked': '{key} 已吊销。',
  'keys.confirmRegenerate': '为 {key} 生成新私钥？旧私钥将立即失效。',
  'keys.confirmRevoke': '吊销 {key}？使用它的程序将立即无法访问。',
  'keys.secretTitle': '你的新私钥',
  'keys.secretOnce': '请立即复制私钥：它只显示这一次。',
  'keys.copyKey': '复制密钥',
  'keys.copySecret': '复制私钥',
  'keys.allowList': 'IP 白名单',
  'keys.allowHelp': '名单不为空时，API 只接受来自这些地址的请求。支持 IPv4、IPv6 和 CIDR 网段。',
  'keys.allowLabel': '地址和网段，每行一个',
  'keys.yourIp': '你当前的地址：{ip}',
  'keys.addMine': '添加我的地址',
  'keys.saveList': '保存名单',
  'keys.listSaved': '白名单已保存。',

  'audit.title': '审计日志',
  'audit.intro': 'API 和这些页面在你的账户上做了什么，以及来自哪里。',
  'audit.when': '时间',
  'audit.what': '操作',
  'audit.target': '对象',
  'audit.outcome': '结果',
  'audit.via': '途径',
  'audit.from': '来源',
  'audit.web': '页面',
  'audit.api': 'API',
  'audit.more': '更早的记录',

  'security.title': '修改密码',
  'security.current': '当前密码',
  'security.new': '新密码',
  'security.submit': '修改密码',
  'security.wrong': '当前密码错误。',
  'security.changed': '密码已修改，其他浏览器均已退出登录。',
}

const tables: Record<Lang, Record<Key, string>> = { en, 'zh-Hans': zh }
const STORAGE_KEY = 'dns-manager.lang'
let current: Lang = 'en'

export function initialLang(): Lang {
  try {
    const saved = localStorage.getItem(STORAGE_KEY)
    if (saved === 'en' || saved === 'zh-Hans') return saved
  } catch {
    // storage refused: the browser's languages decide
  }
  return navigator.languages.some((l) => /^zh(-(hans|cn|sg))?$/i.test(l) || /^zh-hans/i.test(l))
    ? 'zh-Hans'
    : 'en'
}

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

export function t(key: Key, params: Record<string, string | number> = {}): string {
  const text = tables[current][key] ?? en[key]
  return text.replace(/\{(\w+)\}/g, (_, name: string) => String(params[name] ?? `{${name}}`))
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—'
  return (
    new Intl.DateTimeFormat(current, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }).format(
      new Date(iso),
    ) + ' UTC'
  )
}

/** Prices and balances are kept in cents of the operator's currency, shown with two decimals. */
export function formatMoney(cents: number): string {
  if (cents === 0) return current === 'zh-Hans' ? '免费' : 'free'
  return new Intl.NumberFormat(current, { minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(
    cents / 100,
  )
}

export function termOf(years: number): string {
  if (years === 0) return current === 'zh-Hans' ? '永久' : 'never expires'
  return current === 'zh-Hans' ? `${years} 年` : `${years} year${years === 1 ? '' : 's'}`
}

export function formatWait(seconds: number): string {
  if (current === 'zh-Hans') return seconds >= 60 ? `${Math.ceil(seconds / 60)} 分钟` : `${seconds} 秒`
  const m = Math.ceil(seconds / 60)
  return seconds >= 60 ? `${m} minute${m === 1 ? '' : 's'}` : `${seconds} second${seconds === 1 ? '' : 's'}`
}
