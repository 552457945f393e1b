module.exports = { ...require('@quartet/core/jest-preset'), displayName: 'dns-manager' }
