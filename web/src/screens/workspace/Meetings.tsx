/** The workspace's meetings: each with its transcript by speaker, the mixed playback track (fetched over the
 * meeting-audio lane with this browser's credential, played from memory), the notes, decisions and action items the
 * meeting-notes pipeline saved, and a one-click "Make ticket" per action item. Members record a meeting and import
 * its transcript (WebVTT or JSON segments); audio channels arrive over the HTTP lane the manual describes. */
import { useEffect, useId, useState, type FormEvent } from "react";
import type { MeetingDetail, MeetingView, SegmentView } from "../../generated/ops";
import { loadToken } from "../../auth/credential";
import { Link } from "../../Link";
import { LoadedList } from "../../components/LoadedList";
import { Refusal } from "../../components/Outcome";
import { when } from "../../components/time";
import { useAction, useWrite } from "../../data/mutations";
import { useRead } from "../../data/queries";
import { ticketPath } from "../../router";

function clock(seconds: number): string {
  const s = Math.floor(seconds);
  const mm = String(Math.floor(s / 60) % 60).padStart(2, "0");
  const ss = String(s % 60).padStart(2, "0");
  return s >= 3600 ? `${Math.floor(s / 3600)}:${mm}:${ss}` : `${mm}:${ss}`;
}

function RecordMeeting({ workspaceId }: { workspaceId: string }) {
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const [title, setTitle] = useState("");
  const [people, setPeople] = useState("");
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const participants = people
      .split(",")
      .map((p) => p.trim())
      .filter(Boolean);
    if (await action.run(() => write("meetings.create", { workspace_id: workspaceId, title, participants }))) {
      setTitle("");
      setPeople("");
    }
  };
  return (
    <details className="adder">
      <summary>Record a meeting</summary>
      <form className="stack-form" onSubmit={submit} aria-label="Record a meeting">
        <div className="field">
          <label htmlFor={`${id}-title`}>Title</label>
          <input id={`${id}-title`} value={title} required maxLength={300} onChange={(e) => setTitle(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-people`}>Participants (comma-separated)</label>
          <input id={`${id}-people`} value={people} onChange={(e) => setPeople(e.target.value)} />
        </div>
        <button type="submit" disabled={action.busy || !title.trim()}>
          Record
        </button>
        <Refusal error={action.error} />
      </form>
    </details>
  );
}

function ImportTranscript({ workspaceId, meetingId }: { workspaceId: string; meetingId: string }) {
  const write = useWrite();
  const action = useAction();
  const id = useId();
  const [format, setFormat] = useState<"webvtt" | "json">("webvtt");
  const [content, setContent] = useState("");
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const args = { workspace_id: workspaceId, meetingId, format, content };
    const done = await action.run(
      () => write("meetings.importTranscript", args),
      (r) => `Imported ${r.segments} segments.`,
    );
    if (done) setContent("");
  };
  return (
    <details className="adder">
      <summary>Import a transcript</summary>
      <form className="stack-form" onSubmit={submit} aria-label="Import a transcript">
        <div className="field">
          <label htmlFor={`${id}-format`}>Format</label>
          <select id={`${id}-format`} value={format} onChange={(e) => setFormat(e.target.value as "webvtt" | "json")}>
            <option value="webvtt">WebVTT</option>
            <option value="json">JSON segments</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-content`}>Transcript (replaces the current one)</label>
          <textarea id={`${id}-content`} rows={6} value={content} required onChange={(e) => setContent(e.target.value)} />
        </div>
        <button type="submit" disabled={action.busy || !content.trim()}>
          Import
        </button>
        <Refusal error={action.error} />
        {action.done && <p role="status">{action.done}</p>}
      </form>
    </details>
  );
}

/** The mixed track, fetched with the credential (an `<audio src>` cannot send one) and played from a blob. */
function Playback({ workspaceId, meeting }: { workspaceId: string; meeting: MeetingView }) {
  const [url, setUrl] = useState<string | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  useEffect(() => {
    let made: string | null = null;
    let live = true;
    const path = `/meeting-audio/${encodeURIComponent(workspaceId)}/${encodeURIComponent(meeting.id)}/playback`;
    fetch(path, { headers: { Authorization: `Bearer ${loadToken(window.localStorage) ?? ""}` } })
      .then(async (r) => {
        if (!r.ok) throw new Error(`the server answered ${r.status}`);
        const blob = await r.blob();
        if (!live) return;
        made = URL.createObjectURL(blob);
        setUrl(made);
      })
      .catch((e: unknown) => live && setFailed(e instanceof Error ? e.message : String(e)));
    return () => {
      live = false;
      if (made) URL.revokeObjectURL(made);
    };
  }, [workspaceId, meeting.id, meeting.playbackBytes]);
  if (failed) return <p role="alert">The recording could not be loaded: {failed}.</p>;
  if (!url) return <p aria-busy="true">Loading the recording…</p>;
  return <audio controls src={url} aria-label={`Recording of ${meeting.title}`} preload="metadata" />;
}

/** Consecutive segments of one speaker as one turn, as people read a transcript. */
function turns(segments: readonly SegmentView[]): SegmentView[] {
  const out: SegmentView[] = [];
  for (const s of segments) {
    const last = out[out.length - 1];
    if (last && last.speaker === s.speaker) out[out.length - 1] = { ...last, end: s.end, text: `${last.text} ${s.text}` };
    else out.push({ ...s });
  }
  return out;
}

function Transcript({ segments }: { segments: readonly SegmentView[] }) {
  if (segments.length === 0) return <p>No transcript yet.</p>;
  return (
    <ol className="list transcript" aria-label="Transcript">
      {turns(segments).map((t) => (
        <li key={`${t.start}-${t.speaker}`}>
          <div className="row-main">
            <strong>{t.speaker || "Unknown speaker"}</strong>
            <span className="hint">
              {clock(t.start)}–{clock(t.end)}
            </span>
          </div>
          <p className="wrap">{t.text}</p>
        </li>
      ))}
    </ol>
  );
}

function ActionItems({ workspaceId, detail, member }: { workspaceId: string; detail: MeetingDetail; member: boolean }) {
  const write = useWrite();
  const action = useAction();
  const meetingId = detail.meeting.id;
  return (
    <>
      <LoadedList
        noun="action items"
        items={detail.actionItems}
        error={null}
        row={(a) => (
          <li key={a.id}>
            <div className="row-main">
              <span className="wrap">{a.text}</span>
              {a.owner && <span className="hint">owner: {a.owner}</span>}
              {a.due && <span className="hint">due: {a.due}</span>}
            </div>
            <div className="row-actions">
              {a.ticketId ? (
                <Link href={ticketPath(workspaceId, a.ticketId)}>Open its ticket</Link>
              ) : (
                member && (
                  <button
                    type="button"
                    disabled={action.busy}
                    aria-label={`Make ticket: ${a.text}`}
                    onClick={() =>
                      void action.run(() =>
                        write("meetings.actionItems.ticket", { workspace_id: workspaceId, meetingId, actionItemId: a.id }),
                      )
                    }
                  >
                    Make ticket
                  </button>
                )
              )}
            </div>
          </li>
        )}
      />
      <Refusal error={action.error} />
    </>
  );
}

function MeetingBody({ workspaceId, meetingId, member }: { workspaceId: string; meetingId: string; member: boolean }) {
  const read = useRead("meetings.get", { workspace_id: workspaceId, meetingId });
  const detail = read.data;
  if (!detail) return read.error ? <Refusal error={read.error} /> : <p aria-busy="true">Loading the meeting…</p>;
  const notes = detail.notes[0];
  return (
    <div className="meeting">
      <h4>Recording</h4>
      {detail.meeting.playback ? (
        <Playback workspaceId={workspaceId} meeting={detail.meeting} />
      ) : (
        <p>
          {detail.channels.length === 0
            ? "No audio retained."
            : `${detail.channels.length} audio channel(s) retained; the playback track is made by the meeting-notes pipeline.`}
        </p>
      )}
      <h4>Notes</h4>
      {notes ? (
        <>
          <p className="wrap">{notes.summary}</p>
          {notes.enhancedNotes && <pre className="wrap notes">{notes.enhancedNotes}</pre>}
        </>
      ) : (
        <p>No notes yet.</p>
      )}
      <h4>Decisions</h4>
      <LoadedList
        noun="decisions"
        items={detail.decisions}
        error={null}
        row={(d) => (
          <li key={`${d.createdAt}-${d.text}`} className="wrap">
            {d.text}
          </li>
        )}
      />
      <h4>Action items</h4>
      <ActionItems workspaceId={workspaceId} detail={detail} member={member} />
      <h4>Transcript</h4>
      <Transcript segments={detail.transcript} />
      {member && <ImportTranscript workspaceId={workspaceId} meetingId={meetingId} />}
    </div>
  );
}

function MeetingRow({ workspaceId, meeting, member }: { workspaceId: string; meeting: MeetingView; member: boolean }) {
  const [open, setOpen] = useState(false);
  return (
    <li>
      <details onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
        <summary>
          <strong>{meeting.title}</strong> <span className="hint">{when(meeting.startedAt)}</span>
          {meeting.participants.length > 0 && <span className="hint"> · {meeting.participants.join(", ")}</span>}
        </summary>
        {open && <MeetingBody workspaceId={workspaceId} meetingId={meeting.id} member={member} />}
      </details>
    </li>
  );
}

export function Meetings({ workspaceId, member }: { workspaceId: string; member: boolean }) {
  const read = useRead("meetings.list", { workspace_id: workspaceId });
  return (
    <section aria-labelledby="meetings-title" className="panel" id="meetings">
      <h2 id="meetings-title">Meetings</h2>
      <p className="hint">
        Each meeting keeps its transcript, retained audio, and what the meeting-notes pipeline saved: notes, decisions
        and action items.
      </p>
      <LoadedList
        noun="meetings"
        items={read.data?.meetings}
        error={read.error}
        row={(m) => <MeetingRow key={m.id} workspaceId={workspaceId} meeting={m} member={member} />}
      />
      {member && <RecordMeeting workspaceId={workspaceId} />}
    </section>
  );
}
