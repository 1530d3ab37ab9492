/**
 * Mocha's spec reporter plus one closing line `N passed, N failed, N skipped` that CI reads. With
 * `MOCHA_SUMMARY_FILE` set (test/run-suites.ts) the counts are also appended there as a JSON line,
 * so several runs add up to one closing line.
 */
import { appendFileSync } from 'node:fs';
import Mocha from 'mocha';

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const s = runner.stats ?? { passes: 0, failures: 0, pending: 0 };
      process.stdout.write(`\n${s.passes} passed, ${s.failures} failed, ${s.pending} skipped\n`);
      const file = process.env.MOCHA_SUMMARY_FILE;
      if (file) appendFileSync(file, `${JSON.stringify({ passed: s.passes, failed: s.failures, skipped: s.pending })}\n`);
    });
  }
}

export = SummaryReporter;
