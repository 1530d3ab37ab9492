/**
 * Sign-in: a page when signed out, and a dialog over the current page when the session expired
 * (the page stays mounted, so a half-filled form is kept; the call that found the session expired
 * is sent again after signing in).
 */
import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { logIn } from './client';
import { Field, fieldProps, SubmitRow, useSubmit } from './ui/form';

/** The sign-in form. */
export function LoginForm(props: { heading: string; note?: string | undefined }): JSX.Element {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const { errors, busy, submit } = useSubmit(['email', 'password']);
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => first.current?.focus(), []);
  const onSubmit = (event: Event): void => {
    event.preventDefault();
    void submit(
      () => {
        const found: Record<string, string> = {};
        if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email.trim())) found.email = 'Enter the e-mail address of your account.';
        if (!password) found.password = 'Enter your password.';
        return found;
      },
      async () => {
        await logIn(email.trim(), password);
        setPassword('');
        return 'Signed in.';
      },
    );
  };
  return (
    <form class="login" onSubmit={onSubmit} noValidate aria-labelledby="login-title">
      <h2 id="login-title">{props.heading}</h2>
      {props.note ? <p class="muted">{props.note}</p> : null}
      <Field label="E-mail" name="email" error={errors.email}>
        <input ref={first} type="email" autocomplete="username" value={email} onInput={(e) => setEmail(e.currentTarget.value)} {...fieldProps('email', errors)} />
      </Field>
      <Field label="Password" name="password" error={errors.password}>
        <input type="password" autocomplete="current-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} {...fieldProps('password', errors)} />
      </Field>
      <SubmitRow label="Sign in" busy={busy} errors={errors} />
    </form>
  );
}

/** The dialog shown over the page when the session expired. */
export function SessionExpiredDialog(): JSX.Element {
  return (
    <div class="overlay" role="dialog" aria-modal="true" aria-labelledby="login-title">
      <div class="dialog">
        <LoginForm heading="Your session expired" note="Sign in again to continue; the page and what you typed are kept." />
      </div>
    </div>
  );
}
