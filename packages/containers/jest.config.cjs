// One test file that builds images and boots the whole compose stack: minutes, not seconds, when
// the images are cold (the Docker layer cache makes a second run far shorter).
module.exports = {
  ...require('@quartet/core/jest-preset'),
  displayName: 'containers',
  testTimeout: 1_500_000,
}
