// Unit tests of the pure parts (src/__tests__), with JupyterLab's Jest set-up as the extension
// template uses it: ts-jest with tsconfig.test.json, a jsdom environment, and babel-jest for the
// ES modules JupyterLab's own packages ship.
const jestJupyterLab = require('@jupyterlab/testing/lib/jest-config');

const esModules = [
  '@codemirror',
  '@jupyter/react-components',
  '@jupyter/web-components',
  '@jupyter/ydoc',
  '@jupyterlab/',
  '@marijn',
  '@microsoft',
  'color',
  'exenv-es6',
  'lib0',
  'marked',
  'nanoid',
  'vscode-ws-jsonrpc',
  'y-protocols',
  'y-websocket',
  'yjs'
].join('|');

module.exports = {
  ...jestJupyterLab(__dirname),
  automock: false,
  // The console only: no junit.xml or coverage files left in the work tree.
  reporters: ['default'],
  testRegex: 'src/__tests__/.*\\.spec\\.ts$',
  // A sandbox Stryker left behind (scripts/mutation, interrupted) holds copies of the specs.
  testPathIgnorePatterns: ['/lib/', '/node_modules/', '<rootDir>/.stryker-tmp/'],
  modulePathIgnorePatterns: ['<rootDir>/.stryker-tmp/'],
  transformIgnorePatterns: [`/node_modules/(?!${esModules}).+`]
};
