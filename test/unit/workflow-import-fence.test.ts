/**
 * Outside workflows/, workflow implementations are imported for their types only: callers take
 * names (types, ids, signals, failure types, workflow type constants) from the pure definitions
 * modules in `workflows/definitions/`, and a workflow's function type with `import type`. A runtime
 * import would pull workflow code (and its determinism rules) into the API, activities or workers.
 * Every source file of the project is parsed; the check itself is proven on forbidden samples.
 * The definitions modules themselves stay pure: they import only the SDK's pure packages and each
 * other, so workflows may import them under the determinism fence and callers at no cost.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

const ROOT = resolve(__dirname, '../..');
const SOURCE_ROOTS = ['lib', 'gateway', 'agent', 'api', 'activities', 'workers', 'migrations', 'ops', 'bench', 'test'];

/** Files allowed a runtime import of implementations, each with its reason. */
const EXEMPT: Record<string, string> = {
  'test/unit/workflow-types.test.ts': 'reads each exported workflow function\'s `.name` to prove it equals its type constant',
};

function isImplementation(path: string): boolean {
  const inWorkflows = relative(join(ROOT, 'workflows'), path);
  if (inWorkflows.startsWith('..')) return false;
  return !(inWorkflows === 'definitions' || inWorkflows.startsWith(`definitions${sep}`));
}

/** Module specifiers of `file` (project-relative) that load a workflow implementation at runtime. */
function runtimeWorkflowImports(file: string, source: string): string[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const check = (specifier: ts.Expression | undefined, typeOnly: boolean) => {
    if (typeOnly || !specifier || !ts.isStringLiteralLike(specifier) || !specifier.text.startsWith('.')) return;
    if (isImplementation(resolve(ROOT, dirname(file), specifier.text))) found.push(specifier.text);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const bindings = clause?.namedBindings;
      // `import type …`, or only `{ type a, type b }` (elided at compile time); a bare `import '…'` runs the module.
      const typeOnly = clause !== undefined && (clause.isTypeOnly || (!clause.name && bindings !== undefined
        && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly)));
      check(node.moduleSpecifier, typeOnly);
    } else if (ts.isExportDeclaration(node)) {
      const clause = node.exportClause;
      check(node.moduleSpecifier, node.isTypeOnly || (clause !== undefined && ts.isNamedExports(clause)
        && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly)));
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      check(node.moduleReference.expression, node.isTypeOnly);
    } else if (ts.isCallExpression(node)
      && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))) {
      check(node.arguments[0], false);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** Modules a definitions module may import besides other definitions modules. */
const DEFINITIONS_MAY_IMPORT = ['@temporalio/workflow', '@temporalio/common'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|mts|cts)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

describe('workflow implementations are imported for types only outside workflows/', () => {
  it('finds runtime imports, re-exports, require and dynamic import of implementations, and allows types and definitions', () => {
    const api = 'api/routes/sample.ts';
    assert.deepEqual(runtimeWorkflowImports(api, "import { workspaceArchive } from '../../workflows/workspace-archive';"), ['../../workflows/workspace-archive']);
    assert.deepEqual(runtimeWorkflowImports(api, "import * as wf from '../../workflows';"), ['../../workflows']);
    assert.deepEqual(runtimeWorkflowImports(api, "import { type workspaceArchive, x } from '../../workflows/workspace-archive';"), ['../../workflows/workspace-archive']);
    assert.deepEqual(runtimeWorkflowImports(api, "import '../../workflows/chat';"), ['../../workflows/chat']);
    assert.deepEqual(runtimeWorkflowImports(api, "export { chatWorkflow } from '../../workflows/chat';"), ['../../workflows/chat']);
    assert.deepEqual(runtimeWorkflowImports(api, "const m = require('../../workflows/chat');"), ['../../workflows/chat']);
    assert.deepEqual(runtimeWorkflowImports(api, "export async function f() { return import('../../workflows/grant'); }"), ['../../workflows/grant']);
    assert.deepEqual(runtimeWorkflowImports('workers/sample.ts', "import { hostSelfCheck } from '../workflows/host-self-check';"), ['../workflows/host-self-check']);

    assert.deepEqual(runtimeWorkflowImports(api, "import type { workspaceArchive } from '../../workflows/workspace-archive';"), []);
    assert.deepEqual(runtimeWorkflowImports(api, "import { type workspaceArchive } from '../../workflows/workspace-archive';"), []);
    assert.deepEqual(runtimeWorkflowImports(api, "export type { chatWorkflow } from '../../workflows/chat';"), []);
    assert.deepEqual(runtimeWorkflowImports(api, "import { chatWorkflowId } from '../../workflows/definitions/chat';"), []);
    assert.deepEqual(runtimeWorkflowImports(api, "import { x } from '../../workflowsish/chat';"), []);
    assert.deepEqual(runtimeWorkflowImports(api, "const p = require.resolve('../../workflows');"), []);
  });

  it('no file of the project outside workflows/ imports a workflow implementation at runtime', () => {
    const offenders: string[] = [];
    for (const root of SOURCE_ROOTS) {
      for (const path of sourceFiles(join(ROOT, root))) {
        const file = relative(ROOT, path).split(sep).join('/');
        if (file in EXEMPT) continue;
        for (const specifier of runtimeWorkflowImports(file, readFileSync(path, 'utf8'))) offenders.push(`${file} imports ${specifier}`);
      }
    }
    assert.deepEqual(offenders, [], 'import names from workflows/definitions/ and function types with `import type`');
  });

  it('definitions modules import only @temporalio/workflow, @temporalio/common and each other', () => {
    const offenders: string[] = [];
    for (const path of sourceFiles(join(ROOT, 'workflows/definitions'))) {
      const sf = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
      for (const statement of sf.statements) {
        if (!(ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) || !statement.moduleSpecifier) continue;
        const specifier = (statement.moduleSpecifier as ts.StringLiteral).text;
        const sibling = /^\.\/[a-z0-9-]+$/.test(specifier);
        if (!sibling && !DEFINITIONS_MAY_IMPORT.includes(specifier)) offenders.push(`${relative(ROOT, path)} imports ${specifier}`);
      }
    }
    assert.deepEqual(offenders, []);
  });
});
