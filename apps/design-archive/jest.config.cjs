module.exports = { ...require('@quartet/core/jest-preset'), displayName: 'design-archive' }
