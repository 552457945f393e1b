module.exports = { ...require('@quartet/core/jest-preset'), displayName: 'stack', testTimeout: 120_000 }
