// Stryker (scripts/mutation): mutation testing of the notifier and the focus reporter against
// the Jest specs, one test process at a time (the machine is shared). The sandboxes go to
// .stryker-tmp/ and the JSON report to reports/ (both ignored by git).
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'jest',
  jest: { projectType: 'custom', configFile: 'jest.config.js' },
  mutate: ['src/notify.ts', 'src/focus.ts'],
  coverageAnalysis: 'perTest',
  concurrency: 1,
  reporters: ['clear-text', 'progress', 'json'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always'
};
