module.exports = { ...require('@quartet/core/jest-preset'), displayName: 'key-info' }
