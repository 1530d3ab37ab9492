/**
 * docs/ and the code's comments must stand alone: a reader does not have the specification the
 * project was built from, so a citation by section number ("spec 3.4", "Spec sections 2.1 and
 * 2.2", "spec-8", "(spec)") tells them nothing. State the rule, or point to the docs/ page that
 * explains it. This test fails, naming file and line, when a cleaned folder holds such a citation.
 *
 * Folders and files are listed in `CLEANED` once cleaned; today every source folder is.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = process.cwd();
const CLEANED = [
  'docs', 'lib', 'workers', 'ops', 'bench', 'test', 'migrations', 'workflows', 'activities', 'api',
  'agent', 'gateway', 'console', 'config', 'README.md',
];
const TEXT_FILE = /\.(ts|tsx|js|mjs|cjs|md|json|jsonl|sse|txt|sh|ya?ml|sql|html|css)$/;
/** This file names the forms it forbids. */
const SELF = join('test', 'unit', 'docs-stand-alone.test.ts');

/** The forms of a citation of the specification by section, each with what it catches. */
const CITATIONS: RegExp[] = [
  // "spec 3.4", "Spec 8", "spec-8", "spec's 4.4", "spec sections 2.13", "specification 2.1"
  /\bspec(?:ification)?(?:'s)?(?:[ -]+sections?)?[ -]+\d+(?:\.\d+)*/i,
  // "(spec)", "(spec: \"quoted rule\")"
  /(?<![(\w])\(spec(?:ification)?(?:\)|: *["“])/i,
  // "the spec is silent", "the spec's note", "the specification's rule"
  /\bthe spec(?:ification)?\b/i,
];

/** The citations in one text, as `line: text`. */
export function findCitations(text: string): string[] {
  return text.split('\n').flatMap((line, i) =>
    CITATIONS.some((re) => re.test(line)) ? [`${i + 1}: ${line.trim().slice(0, 160)}`] : []);
}

/** The text files of a folder (recursively), or the file itself when `dir` names one. */
function filesUnder(dir: string): string[] {
  if (statSync(join(ROOT, dir)).isFile()) return [dir];
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(path);
    return entry.isFile() && TEXT_FILE.test(entry.name) ? [path] : [];
  });
}

describe('docs and comments stand alone (no citations of specification sections)', () => {
  it('recognizes each form of a citation', () => {
    const cited = [
      'Offload (spec 2.9, 8)', 'Spec sections 2.13 (execution host)', 'The spec-8 retry policy',
      'within spec 8\'s 5 s', 'the spec\'s 4.4 table', 'rules (spec)', '(spec: "per endpoint")',
      'Decisions where the spec is silent', 'rule "median > 0" is the specification\'s',
    ];
    for (const text of cited) assert.equal(findCitations(text).length, 1, text);
  });

  it('leaves ordinary uses of the word alone', () => {
    const plain = [
      'the stdio launch specification `{command, args}`', 'const spec = LEVELS.find(l)',
      'Mocha\'s spec reporter', 'validates it against the OpenAPI 3.1 specification',
      'await Promise.all(specs.map((spec) => this.startOne(spec)));', '  spec: ProcessSpec;',
      'private startOne(spec: ProcessSpec)', 'a schedule\'s definition (spec, policies, action)',
    ];
    for (const text of plain) assert.deepEqual(findCitations(text), [], text);
  });

  it(`finds none in ${CLEANED.join(', ')}`, () => {
    const found = CLEANED.flatMap(filesUnder)
      .filter((path) => path !== SELF)
      .flatMap((path) => findCitations(readFileSync(join(ROOT, path), 'utf8')).map((hit) => `${path}:${hit}`));
    assert.deepEqual(found, [], `State the rule or link the docs/ section instead of citing the specification:\n${found.join('\n')}`);
  });
});
