// ESLint for the labextension, set up like the JupyterLab extension template
// (jupyterlab/extension-template): ESLint's and typescript-eslint's recommended rules, the
// Jupyter plugin's recommended rules, the template's own rules, and Prettier as the formatter.
import js from '@eslint/js';
import jupyter from '@jupyter/eslint-plugin';
import prettierRecommended from 'eslint-plugin-prettier/recommended';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig([
  {
    ignores: [
      'node_modules',
      'lib',
      'coverage',
      '.yarn',
      '.stryker-tmp',
      'reports',
      '**/*.js',
      '**/*.d.ts'
    ]
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  jupyter.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      globals: { ...globals.browser, ...globals.es2015, ...globals.node },
      parserOptions: { project: 'tsconfig.json', sourceType: 'module' }
    },
    rules: {
      // Interfaces are named IThing, as everywhere in JupyterLab and Lumino.
      '@typescript-eslint/naming-convention': [
        'error',
        {
          selector: 'interface',
          format: ['PascalCase'],
          custom: { regex: '^I[A-Z]', match: true }
        }
      ],
      '@typescript-eslint/no-unused-vars': ['warn', { args: 'none' }],
      '@typescript-eslint/no-explicit-any': 'warn',
      '@typescript-eslint/no-namespace': 'off',
      '@typescript-eslint/no-use-before-define': 'off',
      // The plugin's strings are English only, like the server's: it has no translations.
      'jupyter/no-untranslated-string': 'off',
      eqeqeq: 'error'
    }
  },
  {
    // The plugin starts every part as soon as the server's capabilities answer (one small
    // bundle); loading them in separate chunks would be a change of its own, not a lint fix.
    files: ['src/index.ts'],
    rules: { 'jupyter/prefer-lazy-imports': 'off' }
  },
  {
    // The unit tests are compiled with their own tsconfig (jest types, not part of the bundle).
    files: ['src/__tests__/**/*.ts'],
    languageOptions: {
      globals: { ...globals.jest },
      parserOptions: { project: 'tsconfig.test.json' }
    }
  },
  prettierRecommended,
  {
    // After eslint-config-prettier, which switches these off, so that they apply as the template
    // means them. Prettier already writes single quotes: `quotes` adds what it leaves alone
    // (template literals without a placeholder); typescript-eslint 8 dropped the template's
    // `@typescript-eslint/quotes`, so this is the core rule with the same options. `curly: all`
    // does not fight Prettier; `prefer-arrow-callback` is off there only for its autofix.
    files: ['**/*.ts', '**/*.tsx'],
    rules: {
      curly: ['error', 'all'],
      'prefer-arrow-callback': 'error',
      quotes: ['error', 'single', { avoidEscape: true, allowTemplateLiterals: false }]
    }
  }
]);
