// Lint (npm run lint, run by CI): typescript-eslint's recommended rules and the layout's import
// boundaries (docs/architecture.md). test/architecture.test.ts checks the same boundaries and
// import cycles from the whole graph; this catches them in the editor, line by line.
import tseslint from 'typescript-eslint';

const noTestImports = { group: ['**/test/**', '../**/test/*'], message: 'application code never imports test helpers or fakes (test/)' };
const noModules = { group: ['**/modules/**', '**/pages/**'], message: 'this layer does not depend on domain modules or pages' };

export default tseslint.config(
  { ignores: ['node_modules/**', 'data/**', '.ci/**', 'dist/**', 'packages/*/dist/**', 'packages/sdk/src/schema.d.ts'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-restricted-imports': ['error', { patterns: [noTestImports] }],
      // A timer read by a closure declared before it is armed stays `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    files: ['src/platform/**/*.ts', 'src/rails/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [noTestImports, noModules] }] },
  },
  {
    files: ['src/documents/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            noTestImports,
            {
              group: ['**/modules/**', '**/pages/**', '**/rails/**', '**/platform/**', '**/runtime.ts', '**/config.ts'],
              message: 'the DIAN document code is pure: no database, module, rail or runtime import',
            },
          ],
        },
      ],
    },
  },
  { files: ['**/*.test.ts', 'test/**/*.ts', 'bench/**/*.ts', 'scripts/**'], rules: { 'no-restricted-imports': 'off' } },
);
