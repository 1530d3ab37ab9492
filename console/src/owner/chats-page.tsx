/**
 * The chats list (`GET /v1/agent/jobs`, newest first): each chat's title, model, workspace
 * (repository or temporary) and conversation state, refreshed every 10 s. The filter maps to the
 * API's `temporary` query (all / temporary only / with a repository) and lives in the URL, so a
 * reload or a shared link shows the same list. "Older chats" pages with `before`.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { PageProps } from '../pages';
import { navigate } from '../router';
import { ErrorNote, Freshness, Link, Page, Table, When } from '../ui/parts';
import { useResource } from '../ui/resource';
import { ChatState } from './chat-state';
import type { JobList, JobListItem } from './types';

type Filter = 'all' | 'temporary' | 'repository';

const FILTER_QUERY: Record<Filter, string> = { all: '', temporary: '&temporary=true', repository: '&temporary=false' };

function filterOf(query: URLSearchParams): Filter {
  const value = query.get('show');
  return value === 'temporary' || value === 'repository' ? value : 'all';
}

/** The list of the owner's chats. */
export function ChatsPage(props: PageProps): JSX.Element {
  const filter = filterOf(props.query);
  const [before, setBefore] = useState<string | undefined>(undefined);
  const path = `/v1/agent/jobs?limit=50${FILTER_QUERY[filter]}${before ? `&before=${encodeURIComponent(before)}` : ''}`;
  const list = useResource<JobList>(path, { refreshMs: 10_000 });
  const choose = (next: Filter): void => {
    setBefore(undefined);
    navigate(next === 'all' ? '/chats' : `/chats?show=${next}`, { replace: true });
  };
  return (
    <Page title="Chats" actions={<Link to="/chats/new" class="button">Start a chat</Link>}>
      <div class="row">
        <label for="chat-filter">Show</label>
        <select id="chat-filter" value={filter} onChange={(e) => choose(e.currentTarget.value as Filter)}>
          <option value="all">All chats</option>
          <option value="temporary">Temporary workspaces only</option>
          <option value="repository">Chats on a repository</option>
        </select>
      </div>
      <Freshness loading={list.loading} loadedAt={list.loadedAt} error={list.error} />
      {list.data ? null : <ErrorNote error={list.error} what="The chats could not be read" />}
      <Table<JobListItem>
        caption={filter === 'temporary' ? 'Chats in temporary workspaces' : filter === 'repository' ? 'Chats on a repository' : 'Your chats'}
        rows={list.data?.jobs}
        rowKey={(job) => job.job_id}
        empty="No chats yet."
        columns={[
          { label: 'Chat', cell: (job) => <Link to={`/chats/${encodeURIComponent(job.job_id)}`}>{job.title || job.job_id}</Link> },
          { label: 'State', cell: (job) => <ChatState state={job.conversation_state} /> },
          { label: 'Workspace', cell: (job) => (job.repo ? <code>{job.repo}</code> : <span class="muted">temporary</span>) },
          { label: 'Model', cell: (job) => <code>{job.model}</code> },
          { label: 'Updated', cell: (job) => <When at={job.updated_at} /> },
        ]}
      />
      <div class="row">
        {before ? <button type="button" onClick={() => setBefore(undefined)}>Newest chats</button> : null}
        {list.data?.next_before ? <button type="button" onClick={() => setBefore(list.data?.next_before ?? undefined)}>Older chats</button> : null}
      </div>
    </Page>
  );
}
