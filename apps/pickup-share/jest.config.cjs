module.exports = { ...require('@quartet/core/jest-preset'), displayName: 'pickup-share' }
