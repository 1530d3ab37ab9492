/**
 * Alert cards in the incoming-webhook JSON shape (`text` for notifications and clients without
 * blocks, `blocks` for the card). Values that came from clients (paths, key prefixes, reasons)
 * are escaped for mrkdwn, stripped of control characters and shortened. Key prefixes are the
 * few leading characters the project already shows as a key's prefix, never a whole key. Counts
 * that hit a cap, or that missed events, are floors and read "≥ n".
 */
import type { Incident } from './incidents';
import type { Tally } from './tally';
import type { AlertRule } from './types';

export interface Card {
  text: string;
  blocks: unknown[];
}

/** What an endpoint id stands for (model and provider label), for circuit cards. */
export type EndpointDescriber = (endpointId: string) => string;

const TITLES: Record<Incident['type'], string> = {
  auth_failure_spike: 'Authentication failure spike',
  auth_ip_blocked: 'Source blocked after repeated authentication failures',
  circuit_open: 'Circuit breaker opened',
};

/** Text from a client, made safe for one mrkdwn line. */
export function clean(value: string, max = 120): string {
  // eslint-disable-next-line no-control-regex -- control characters are what is removed
  const flat = value.replace(/[\u0000-\u001f\u007f]/g, ' ');
  const cut = flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
  return cut.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function label(tally: Tally, partial: boolean): string {
  return partial && !tally.capped ? `≥ ${tally.distinct}` : tally.distinctLabel();
}

function listing(tally: Tally, partial: boolean, describe: (v: string) => string = (v) => `\`${clean(v)}\``): string {
  const top = tally.top(5);
  if (top.length === 0) return '–';
  const more = tally.distinct - top.length;
  const items = top.map(([v, n]) => `${describe(v)} ×${partial || tally.capped ? '≥ ' : ''}${n}`);
  // Past the cap, how many more values there were is unknown: at least one.
  if (tally.capped) items.push(`and ≥ ${more + 1} more`);
  else if (more > 0) items.push(`and ${more} more`);
  return items.join(', ');
}

function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

function count(n: number, partial: boolean): string {
  return `${partial ? '≥ ' : ''}${n}`;
}

/** The facts of an incident as card fields. */
function fields(incident: Incident, describeEndpoint: EndpointDescriber): string[] {
  const p = incident.partial;
  if (incident.type === 'circuit_open') {
    return [
      `*Circuits*\n${listing(incident.endpoints, p, (id) => clean(describeEndpoint(id), 200))}`,
      `*Reasons*\n${listing(incident.reasons, p)}`,
      `*Still open*\n${incident.openCircuits.size}`,
    ];
  }
  return [
    `*Sources* (${label(incident.sources, p)})\n${listing(incident.sources, p)}`,
    `*Distinct addresses*\n${label(incident.addresses, p)}: ${listing(incident.addresses, p)}`,
    `*Key prefixes* (${label(incident.keyPrefixes, p)})\n${listing(incident.keyPrefixes, p)}`,
    `*Reasons*\n${listing(incident.reasons, p)}`,
    `*Paths*\n${listing(incident.paths, p)}`,
  ];
}

function headline(incident: Incident, rule: AlertRule, describeEndpoint: EndpointDescriber): string {
  const n = count(incident.events, incident.partial);
  switch (incident.type) {
    case 'auth_failure_spike':
      return `${n} failed authentications within ${rule.window} s (threshold ${rule.threshold}) from ${label(incident.sources, incident.partial)} sources`;
    case 'auth_ip_blocked':
      return `${incident.sources.top(3).map(([s]) => `\`${clean(s)}\``).join(', ')} refused after repeated authentication failures`;
    case 'circuit_open':
      return `${incident.endpoints.top(3).map(([id]) => clean(describeEndpoint(id), 200)).join(', ')} stopped receiving requests`;
  }
}

function card(title: string, summary: string, facts: string[], context: string): Card {
  return {
    text: `${title}: ${summary}`,
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: title } },
      { type: 'section', text: { type: 'mrkdwn', text: summary } },
      { type: 'section', fields: facts.map((text) => ({ type: 'mrkdwn', text: text.slice(0, 1900) })) },
      { type: 'context', elements: [{ type: 'mrkdwn', text: context }] },
    ],
  };
}

/** The card posted when an incident opens. */
export function openingCard(incident: Incident, rule: AlertRule, describeEndpoint: EndpointDescriber): Card {
  return card(`:rotating_light: ${TITLES[incident.type]}`, headline(incident, rule, describeEndpoint), fields(incident, describeEndpoint),
    `\`${incident.type}\` · incident \`${incident.id}\` · opened ${new Date(incident.openedAt).toISOString()}`);
}

/** The card posted when an incident recovers: the whole incident picture. */
export function recoveryCard(incident: Incident, now: number, describeEndpoint: EndpointDescriber): Card {
  const what = incident.type === 'circuit_open' ? 'circuit openings' : incident.type === 'auth_ip_blocked' ? 'sources blocked' : 'failed authentications';
  const summary = `Recovered after ${duration(now - incident.openedAt)}: ${count(incident.events, incident.partial)} ${what} in total`;
  return card(`:white_check_mark: Recovered: ${TITLES[incident.type]}`, summary, fields(incident, describeEndpoint),
    `\`${incident.type}\` · incident \`${incident.id}\` · ${new Date(incident.openedAt).toISOString()} → ${new Date(now).toISOString()}`);
}
