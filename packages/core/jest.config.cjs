module.exports = { ...require('./jest-preset.cjs'), displayName: 'core' }
