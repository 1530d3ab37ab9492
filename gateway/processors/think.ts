/**
 * Splits a leading `<think>...</think>` block off assistant text: its inside becomes reasoning, the
 * rest is handed to an inner parser as content. See docs/output-processors.md.
 */
import { type Part, type TextParser, StreamTrim, TagSeeker, heldSuffixLength, pushReasoning } from './text';

const OPEN = '<think>';
const CLOSE = '</think>';

/**
 * - `lead`: only whitespace and maybe a partial `<think>` so far;
 * - `undecided`: text did not open with `<think>`: it is reasoning if `</think>` follows before any
 *   `<think>` (the opening tag was in the prompt), else content; held until that is known;
 * - `reasoning`: inside the block; forwarded at once except a possible partial `</think>`;
 * - `answer`: after the block (or no block): everything goes to the inner parser.
 */
type Mode = 'lead' | 'undecided' | 'reasoning' | 'answer';

/** Think-block splitter; the text after the block goes through `inner`. */
export class ThinkSplitter implements TextParser {
  private mode: Mode = 'lead';
  private lead = '';
  private held = '';
  private readonly undecided = new TagSeeker([OPEN, CLOSE]);
  private readonly reasoning = new StreamTrim(true, true);
  private answer = new StreamTrim(false, false);

  constructor(private readonly inner: TextParser) {}

  /** @inheritdoc */
  push(text: string, out: Part[]): void {
    switch (this.mode) {
      case 'answer':
        this.pushAnswer(text, out);
        break;
      case 'reasoning':
        this.pushReasoning(text, out);
        break;
      case 'undecided':
        this.pushUndecided(text, out);
        break;
      case 'lead':
        this.pushLead(text, out);
        break;
    }
  }

  /** @inheritdoc */
  finish(out: Part[]): void {
    if (this.mode === 'lead') this.inner.push(this.lead, out);
    else if (this.mode === 'undecided') this.inner.push(this.undecided.take(), out);
    else if (this.mode === 'reasoning') pushReasoning(out, this.reasoning.take(this.held));
    this.lead = '';
    this.held = '';
    this.mode = 'answer';
    this.inner.finish(out);
  }

  private pushLead(text: string, out: Part[]): void {
    this.lead += text;
    const body = this.lead.trimStart();
    if (body.length < OPEN.length && OPEN.startsWith(body)) return;
    const raw = this.lead;
    this.lead = '';
    if (body.startsWith(OPEN)) {
      this.mode = 'reasoning';
      this.pushReasoning(body.slice(OPEN.length), out);
    } else {
      this.mode = 'undecided';
      this.pushUndecided(raw, out);
    }
  }

  private pushUndecided(text: string, out: Part[]): void {
    const hit = this.undecided.push(text);
    if (hit === undefined) return;
    if (hit.tag === OPEN) {
      // A `<think>` that is not at the start: plain content, as is.
      this.enterAnswer(false);
      this.pushAnswer(hit.before + OPEN + hit.after, out);
    } else {
      pushReasoning(out, this.reasoning.take(hit.before));
      this.endReasoning(hit.after, out);
    }
  }

  private pushReasoning(text: string, out: Part[]): void {
    const all = this.held === '' ? text : this.held + text;
    const at = all.indexOf(CLOSE);
    if (at >= 0) {
      this.held = '';
      pushReasoning(out, this.reasoning.take(all.slice(0, at)));
      this.endReasoning(all.slice(at + CLOSE.length), out);
      return;
    }
    const keep = heldSuffixLength(all, CLOSE);
    this.held = keep === 0 ? '' : all.slice(all.length - keep);
    pushReasoning(out, this.reasoning.take(keep === 0 ? all : all.slice(0, all.length - keep)));
  }

  private endReasoning(after: string, out: Part[]): void {
    this.reasoning.release();
    this.enterAnswer(true);
    this.pushAnswer(after, out);
  }

  private enterAnswer(trimStart: boolean): void {
    this.mode = 'answer';
    this.answer = new StreamTrim(trimStart, false);
  }

  private pushAnswer(text: string, out: Part[]): void {
    const kept = this.answer.take(text);
    if (kept !== '') this.inner.push(kept, out);
  }
}
