/**
 * Forms: each field has a label and shows its own error (from the browser's checks, the form's
 * own validation, or the server's 4xx naming the field in `param`); an error for no field shows
 * above the submit button. Submitting is refused while the server is unreachable, saying so.
 */
import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, useSession } from '../client';

/** Field errors by field name; `''` is the form's own error. */
export type FieldErrors = Record<string, string>;

/** A labelled field; `error` shows below it and marks it invalid for assistive tech. */
export function Field(props: { label: string; name: string; error?: string | undefined; hint?: string; children: ComponentChildren }): JSX.Element {
  const id = `f-${props.name}`;
  return (
    <div class={`field${props.error ? ' invalid' : ''}`}>
      <label for={id}>{props.label}</label>
      {props.children}
      {props.hint ? <small id={`${id}-hint`} class="hint">{props.hint}</small> : null}
      {props.error ? <small id={`${id}-error`} class="error" role="alert">{props.error}</small> : null}
    </div>
  );
}

/** Input props wiring a field's id and its error description. */
export function fieldProps(name: string, errors: FieldErrors): { id: string; name: string; 'aria-invalid': boolean; 'aria-describedby'?: string } {
  const id = `f-${name}`;
  return errors[name] ? { id, name, 'aria-invalid': true, 'aria-describedby': `${id}-error` } : { id, name, 'aria-invalid': false };
}

/**
 * A form's submission state. `submit(validate, send)`: `validate` returns field errors (empty when
 * fine); `send` calls the server. A server 4xx naming a known field lands on that field.
 */
export function useSubmit(fields: readonly string[]): {
  errors: FieldErrors;
  busy: boolean;
  done: string | undefined;
  submit: (validate: () => FieldErrors, send: () => Promise<string | void>) => Promise<boolean>;
  setErrors: (errors: FieldErrors) => void;
} {
  const [errors, setErrors] = useState<FieldErrors>({});
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<string | undefined>(undefined);
  const submit = async (validate: () => FieldErrors, send: () => Promise<string | void>): Promise<boolean> => {
    const found = validate();
    setDone(undefined);
    if (Object.keys(found).length) {
      setErrors(found);
      return false;
    }
    setErrors({});
    setBusy(true);
    try {
      const message = await send();
      setDone(message || 'Saved.');
      return true;
    } catch (err) {
      const error = err instanceof ApiError ? err : new ApiError(0, (err as Error).message);
      const field = error.param && fields.includes(error.param) ? error.param : '';
      setErrors({ [field]: error.message });
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { errors, busy, done, submit, setErrors };
}

/** The submit row: the form's own error, the success line and a button disabled while busy or offline. */
export function SubmitRow(props: { label: string; busy: boolean; errors: FieldErrors; done?: string | undefined }): JSX.Element {
  const { unreachableSince } = useSession();
  return (
    <div class="submit-row">
      {props.errors[''] ? <p class="error" role="alert">{props.errors['']}</p> : null}
      {props.done && !props.errors[''] ? <p class="ok" role="status">{props.done}</p> : null}
      <button type="submit" disabled={props.busy || unreachableSince !== undefined} title={unreachableSince !== undefined ? 'The server is unreachable: read-only' : undefined}>
        {props.busy ? 'Working…' : props.label}
      </button>
    </div>
  );
}
