// Generated from the server's op registry by `python -m hangar.server.typed_client`. Do not edit: a test fails when this file is stale.
/* eslint-disable */

// Shared definitions

/** ``command`` settings as returned: the names of the secret variables (``secretEnvNames``), not their values. */
export type CommandAdapterView = {
  productTools?: Array<string> | null;
  type: "command";
  argv: Array<string>;
  promptVia?: "stdin" | "arg";
  timeoutSeconds?: number | null;
  env?: Record<string, string>;
  secretEnvNames?: Array<string>;
  historyLimit?: number;
  forgeRepos?: Array<string>;
};

/** ``openai`` settings as returned: the key is never sent back, only whether one is stored. */
export type OpenAIAdapterView = {
  productTools?: Array<string> | null;
  type: "openai";
  baseUrl: string;
  model: string;
  maxTurns?: number;
  timeoutSeconds?: number;
  temperature?: number | null;
  tools?: Array<string>;
  historyLimit?: number;
  hasApiKey?: boolean;
};

export type AgentView = {
  id: string;
  name: string;
  role: string;
  systemPrompt: string;
  adapter: OpenAIAdapterView | CommandAdapterView;
  createdAt: string;
  updatedAt: string;
};

export type AgentDeleted = {
  deleted: boolean;
};

/** The agent a new conversation wakes, or null when the workspace has none. */
export type FrontDoor = {
  agent: AgentView | null;
};

export type AgentList = {
  agents: Array<AgentView>;
};

/** How a turn, and so a run, ended. */
export type RunOutcome = "ok" | "failed" | "interrupted" | "turnLimit";

export type RunStatus = "running" | "finished";

/** The run just dispatched, with its id also as ``runId``. */
export type DispatchedRun = {
  id: string;
  agentId: string;
  spaceId: string;
  status: RunStatus;
  outcome: RunOutcome | null;
  error: string | null;
  prompt: string;
  outputSchema: Record<string, unknown> | null;
  output: unknown;
  hasOutput: boolean;
  outputError: string | null;
  turns: number;
  dispatchedBy: string;
  createdAt: string;
  finishedAt: string | null;
  runId: string;
};

/** The runs just dispatched on one prompt, one per agent in the order asked, with their ids as ``runIds``. */
export type DispatchedRuns = {
  runs: Array<DispatchedRun>;
  runIds: Array<string>;
};

/** One audit entry; ``seq`` numbers the entries of its target. */
export type AuditRow = {
  at: string;
  principal: string;
  action: string;
  target: string;
  seq: number;
  details: Record<string, unknown>;
  door?: string | null;
};

export type LinkCode = {
  code: string;
  expiresAt: string;
};

export type BotProfileView = {
  appName: string;
  botDisplayName: string;
  description: string;
  agentDescription: string;
  command: string;
  agentEnabled: boolean;
};

export type ConnectReply = {
  state: "disconnected" | "connecting" | "connected" | "error";
  error?: string | null;
};

export type CreatedApp = {
  appId: string;
  /** The provider's page that installs the new app to the team */
  installUrl: string | null;
  remainingSteps: Array<string>;
  profile: BotProfileView;
};

/** A failed attempt to reach the provider: what the network or the provider said (never a token), and when. */
export type ChatFailure = {
  message: string;
  at: string;
};

/** The server process holding the connection (its claim in the database). */
export type ChatOwner = {
  host: string;
  pid: number;
};

export type ChatStatus = {
  provider: string;
  state: "disconnected" | "connecting" | "connected" | "error";
  error?: string | null;
  streamingAvailable: boolean;
  /** The last failure since the connection was last up (kept across a restart until the new process's first attempt answers); absent while it is up or never failed */
  lastError?: ChatFailure | null;
  /** When the next attempt is due; absent while one is under way, when connected, or in error */
  nextRetryAt?: string | null;
  /** The server process holding the connection, whichever server answers; absent while none holds it, and to callers other than the workspace's admins and the server owner (a host name and a process id are the operators' business). Its state is as of the holder's last renewal when another server answers */
  owner?: ChatOwner | null;
};

export type UserLinkView = {
  provider: string;
  externalUserId: string;
  externalTeamId: string;
  userId: string;
  method: string;
  linkedAt: string;
};

export type CapabilitiesView = {
  streaming: boolean;
  streamingRequiresThread: boolean;
  ephemeralMessages: boolean;
  threadStatus: boolean;
  threadTitle: boolean;
  slashCommands: boolean;
  taskCards: boolean;
  maxMessageLength: number;
  maxStreamChunkLength: number;
};

export type CredentialFieldView = {
  id: string;
  label: string;
  required: boolean;
  prefix: string;
  purpose: string;
  /** The sentence a value with the wrong prefix is refused with, client and server */
  refusal: string;
};

export type ProviderEntry = {
  provider: string;
  label: string;
  transport: string;
  spaceKind: string;
  fields: Array<CredentialFieldView>;
  capabilities: CapabilitiesView;
  botScopes: Array<string>;
  botEvents: Array<string>;
  defaultCommand: string;
  status?: ChatStatus | null;
};

export type SetupLink = {
  url: string;
  profile: BotProfileView;
};

export type Unlinked = {
  unlinked: boolean;
};

export type EditedProfile = {
  profile: BotProfileView;
  /** Present only when a step is left (``reinstall``); absent: the edit is live */
  remainingStep: string | null;
};

/** ``chat.watchUserLinks``: the roster, first as the reply, then again as each event after a change. */
export type UserLinkRoster = {
  links: Array<UserLinkView>;
};

export type EdgeView = {
  repoId: string;
  path: string;
  /** defines, imports, calls, references or inherits */
  kind: string;
  /** The qualified name of the symbol the edge leaves from; empty at file level */
  source: string;
  /** The name it reaches */
  target: string;
  /** 1-based line of the site */
  line: number;
};

export type CodeEdges = {
  edges: Array<EdgeView>;
};

export type SymbolView = {
  repoId: string;
  path: string;
  name: string;
  /** class, function, method, struct, interface, trait, enum, type, variable, ... */
  kind: string;
  /** The qualified name of the definition around it; empty at file level */
  container: string;
  /** 1-based */
  startLine: number;
  /** 0-based, in bytes */
  startCol: number;
  endLine: number;
  endCol: number;
  /** code.search's rank (higher is better); 0 elsewhere */
  score: number;
};

export type CodeSymbols = {
  symbols: Array<SymbolView>;
};

export type IndexedRepo = {
  repoId: string;
  repoName: string;
  commitId: string;
  indexedAt: string;
  files: number;
  symbols: number;
  edges: number;
  lines: number;
};

export type CodeStatus = {
  repos: Array<IndexedRepo>;
};

/** A device credential, never its token; ``current`` marks the one the caller used. */
export type DeviceView = {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string;
  revokedAt: string | null;
  current: boolean;
  /** the one workspace it reaches; null: all */
  workspaceId: string | null;
  readOnly: boolean;
  expiresAt: string | null;
  /** the OAuth client it was issued to, if any */
  oauthClientId: string | null;
  /** the one space of its workspace it reaches; null: all */
  spaceId: string | null;
};

/** A single-use code, redeemed at ``POST /auth/pair``. */
export type OneTimeCode = {
  code: string;
};

export type DeviceRef = {
  deviceId: string;
};

/** A domain event as stored: its sequence number in the workspace, type and payload (the declared event's model; an emitted event's payload as given). */
export type EventView = AgentsReasoningFinishedView | AgentsReasoningStartedView | AgentsRunFinishedView | AgentsRunStartedView | AgentsTextDeltaView | AgentsToolCallFinishedView | AgentsToolCallStartedView | AgentsTurnFinishedView | AgentsTurnStartedView | AgentsTurnWaitingView | ChatUserLinkedView | ChatUserUnlinkedView | ForgePullRequestView | IdentityMemberAddedView | IdentityMemberRemovedView | IdentityMemberRoleChangedView | IdentityWorkspaceCreatedView | OrchestrationChangedView | OrchestrationNodeApprovedView | PipelineRunFinishedView | PipelineTaskFinishedView | RigsClosedView | RigsControlChangedView | RigsDevDomainChangedView | RigsReapedView | SkillsChangedView | WorkspaceMessagePostedView | WorkspaceSpaceCreatedView | WorkspaceSpaceProvisioningChangedView | WorkspaceSpaceUpdatedView | WorkspaceTicketChangedView | EmittedView;

/** The turn's reasoning prose, sent once when it is complete. */
export type AgentsReasoningFinished = {
  runId: string;
  agentId: string;
  spaceId: string;
  turn: number;
  text: string;
};

export type AgentsReasoningFinishedView = {
  seq: number;
  id: string;
  type: "agents.reasoningFinished";
  occurredAt: string;
  payload: AgentsReasoningFinished;
};

export type AgentsReasoningStarted = {
  runId: string;
  agentId: string;
  spaceId: string;
  turn: number;
};

export type AgentsReasoningStartedView = {
  seq: number;
  id: string;
  type: "agents.reasoningStarted";
  occurredAt: string;
  payload: AgentsReasoningStarted;
};

export type AgentsRunFinished = {
  runId: string;
  agentId: string;
  spaceId: string;
  outcome: RunOutcome;
  error: string | null;
  hasOutput: boolean;
};

export type AgentsRunFinishedView = {
  seq: number;
  id: string;
  type: "agents.runFinished";
  occurredAt: string;
  payload: AgentsRunFinished;
};

export type AgentsRunStarted = {
  runId: string;
  agentId: string;
  spaceId: string;
  dispatchedBy: string;
};

export type AgentsRunStartedView = {
  seq: number;
  id: string;
  type: "agents.runStarted";
  occurredAt: string;
  payload: AgentsRunStarted;
};

export type AgentsTextDelta = {
  runId: string;
  agentId: string;
  spaceId: string;
  turn: number;
  text: string;
};

export type AgentsTextDeltaView = {
  seq: number;
  id: string;
  type: "agents.textDelta";
  occurredAt: string;
  payload: AgentsTextDelta;
};

/** A tool call's end; ``result`` is the (capped) text fed back to the model. */
export type AgentsToolCallFinished = {
  runId: string;
  agentId: string;
  spaceId: string;
  turn: number;
  callId: string;
  name: string;
  ok: boolean;
  result: string;
};

export type AgentsToolCallFinishedView = {
  seq: number;
  id: string;
  type: "agents.toolCallFinished";
  occurredAt: string;
  payload: AgentsToolCallFinished;
};

export type AgentsToolCallStarted = {
  runId: string;
  agentId: string;
  spaceId: string;
  turn: number;
  callId: string;
  name: string;
  arguments: Record<string, unknown>;
};

export type AgentsToolCallStartedView = {
  seq: number;
  id: string;
  type: "agents.toolCallStarted";
  occurredAt: string;
  payload: AgentsToolCallStarted;
};

export type AgentsTurnFinished = {
  runId: string;
  agentId: string;
  spaceId: string;
  turn: number;
  outcome: RunOutcome;
  error: string | null;
};

export type AgentsTurnFinishedView = {
  seq: number;
  id: string;
  type: "agents.turnFinished";
  occurredAt: string;
  payload: AgentsTurnFinished;
};

export type AgentsTurnStarted = {
  runId: string;
  agentId: string;
  spaceId: string;
  turn: number;
};

export type AgentsTurnStartedView = {
  seq: number;
  id: string;
  type: "agents.turnStarted";
  occurredAt: string;
  payload: AgentsTurnStarted;
};

/** The turn waits before its program can start: ``text`` says for what ("terminal image: downloading packages (4/10)", "starting the enclosure"), ``step`` of ``steps`` when the wait counts its steps (else 0 of 0). The last event of a wait has ``waiting`` false: the program starts. */
export type AgentsTurnWaiting = {
  runId: string;
  agentId: string;
  spaceId: string;
  turn: number;
  text: string;
  step: number;
  steps: number;
  waiting: boolean;
};

export type AgentsTurnWaitingView = {
  seq: number;
  id: string;
  type: "agents.turnWaiting";
  occurredAt: string;
  payload: AgentsTurnWaiting;
};

export type ChatUserLinked = {
  provider: string;
  userId: string;
  externalTeamId: string;
  externalUserId: string;
  method: string;
};

export type ChatUserLinkedView = {
  seq: number;
  id: string;
  type: "chat.userLinked";
  occurredAt: string;
  payload: ChatUserLinked;
};

export type ChatUserUnlinked = {
  provider: string;
  userId: string;
  externalTeamId: string;
  externalUserId: string;
};

export type ChatUserUnlinkedView = {
  seq: number;
  id: string;
  type: "chat.userUnlinked";
  occurredAt: string;
  payload: ChatUserUnlinked;
};

/** A pull request was opened or reopened, or its head moved: what ``pullRequest`` triggers fire on (their runs get these fields under the snake_case state keys, ``hangar.pipelines.PULL_REQUEST_STATE_KEYS``). */
export type ForgePullRequest = {
  repoId: string;
  repoFullName: string;
  prNumber: number;
  headSha: string;
  action: string;
  spaceId: string;
};

export type ForgePullRequestView = {
  seq: number;
  id: string;
  type: "forge.pullRequest";
  occurredAt: string;
  payload: ForgePullRequest;
};

export type IdentityMemberAdded = {
  userId: string;
  role: string;
};

export type IdentityMemberAddedView = {
  seq: number;
  id: string;
  type: "identity.memberAdded";
  occurredAt: string;
  payload: IdentityMemberAdded;
};

/** A member left or was removed: what they held in the workspace (rigs, links) must let go. */
export type IdentityMemberRemoved = {
  userId: string;
  role: string;
};

export type IdentityMemberRemovedView = {
  seq: number;
  id: string;
  type: "identity.memberRemoved";
  occurredAt: string;
  payload: IdentityMemberRemoved;
};

export type IdentityMemberRoleChanged = {
  userId: string;
  oldRole: string;
  newRole: string;
};

export type IdentityMemberRoleChangedView = {
  seq: number;
  id: string;
  type: "identity.memberRoleChanged";
  occurredAt: string;
  payload: IdentityMemberRoleChanged;
};

export type IdentityWorkspaceCreated = {
  name: string;
  ownerId: string;
};

export type IdentityWorkspaceCreatedView = {
  seq: number;
  id: string;
  type: "identity.workspaceCreated";
  occurredAt: string;
  payload: IdentityWorkspaceCreated;
};

export type OrchestrationChanged = {
  orchestrationId: string;
  status: string;
};

export type OrchestrationChangedView = {
  seq: number;
  id: string;
  type: "orchestration.changed";
  occurredAt: string;
  payload: OrchestrationChanged;
};

export type OrchestrationNodeApproved = {
  orchestrationId: string;
  nodeKey: string;
};

export type OrchestrationNodeApprovedView = {
  seq: number;
  id: string;
  type: "orchestration.nodeApproved";
  occurredAt: string;
  payload: OrchestrationNodeApproved;
};

/** A pipeline run ended (completed, failed or cancelled). */
export type PipelineRunFinished = {
  runId: string;
  templateId: string;
  status: string;
  parentRunId: string | null;
  error: string | null;
};

export type PipelineRunFinishedView = {
  seq: number;
  id: string;
  type: "pipeline.runFinished";
  occurredAt: string;
  payload: PipelineRunFinished;
};

/** A task reached a terminal outcome (``completed`` counts as success; anything else fails the waiter). */
export type PipelineTaskFinished = {
  taskId: string;
  outcome: string;
  output: unknown;
};

export type PipelineTaskFinishedView = {
  seq: number;
  id: string;
  type: "pipeline.taskFinished";
  occurredAt: string;
  payload: PipelineTaskFinished;
};

/** A rig closed (or failed: ``phase`` says which), carrying its close reason. */
export type RigsClosed = {
  rigId: string;
  spaceId: string;
  surface: string;
  reason: string;
  phase: "closed" | "failed";
};

export type RigsClosedView = {
  seq: number;
  id: string;
  type: "rigs.closed";
  occurredAt: string;
  payload: RigsClosed;
};

/** A person took control of a rig, or handed it back. */
export type RigsControlChanged = {
  rigId: string;
  spaceId: string;
  change: "takeover" | "handback";
  userId: string;
};

export type RigsControlChangedView = {
  seq: number;
  id: string;
  type: "rigs.controlChanged";
  occurredAt: string;
  payload: RigsControlChanged;
};

/** A dev domain was mapped (or re-pointed) or removed. Every server process follows it: the space's live rigs get their resolver names and HTTPS leaf in step with the table, whichever process changed it. */
export type RigsDevDomainChanged = {
  spaceId: string;
  domain: string;
  change: "set" | "removed";
  rigId: string | null;
  guestPort: number | null;
};

export type RigsDevDomainChangedView = {
  seq: number;
  id: string;
  type: "rigs.devDomainChanged";
  occurredAt: string;
  payload: RigsDevDomainChanged;
};

/** A rig was closed for idleness, its hard TTL or memory eviction; ``agent`` is whoever drove it last. */
export type RigsReaped = {
  rigId: string;
  spaceId: string;
  reason: string;
  cause: "idle" | "ttl" | "memory";
  agent: string | null;
};

export type RigsReapedView = {
  seq: number;
  id: string;
  type: "rigs.reaped";
  occurredAt: string;
  payload: RigsReaped;
};

export type SkillsChanged = {
  skillId: string;
  name: string;
  verdict: string;
};

export type SkillsChangedView = {
  seq: number;
  id: string;
  type: "skills.changed";
  occurredAt: string;
  payload: SkillsChanged;
};

export type MessageAuthor = {
  kind: string;
  id: string;
  name: string;
};

export type MessageView = {
  id: string;
  seq: number;
  spaceId: string;
  author: MessageAuthor;
  content: string;
  metadata: Record<string, unknown>;
  runId: string | null;
  createdAt: string;
};

/** A message landed in a space; ``message`` is the message as ``messages.list`` returns it. */
export type WorkspaceMessagePosted = {
  spaceId: string;
  message: MessageView;
};

export type WorkspaceMessagePostedView = {
  seq: number;
  id: string;
  type: "workspace.messagePosted";
  occurredAt: string;
  payload: WorkspaceMessagePosted;
};

export type WorkspaceSpaceCreated = {
  spaceId: string;
  title: string;
  mode: string;
  kind: string;
  hidden: boolean;
};

export type WorkspaceSpaceCreatedView = {
  seq: number;
  id: string;
  type: "workspace.spaceCreated";
  occurredAt: string;
  payload: WorkspaceSpaceCreated;
};

/** Progress of setting a space up (repo checkouts, agent start), as the space row records it. ``state`` is ``provisioning``, ``ready``, ``failed`` or ``cancelled``; ``step`` is ``repo``, ``prCheckout``, ``script`` or ``agent`` while provisioning; ``detail`` names the repo or agent being set up. */
export type WorkspaceSpaceProvisioningChanged = {
  spaceId: string;
  state: string;
  step: string | null;
  detail: string | null;
};

export type WorkspaceSpaceProvisioningChangedView = {
  seq: number;
  id: string;
  type: "workspace.spaceProvisioningChanged";
  occurredAt: string;
  payload: WorkspaceSpaceProvisioningChanged;
};

/** A space was renamed or archived. */
export type WorkspaceSpaceUpdated = {
  spaceId: string;
  title: string;
  archived: boolean;
};

export type WorkspaceSpaceUpdatedView = {
  seq: number;
  id: string;
  type: "workspace.spaceUpdated";
  occurredAt: string;
  payload: WorkspaceSpaceUpdated;
};

export type WorkspaceTicketChanged = {
  ticketId: string;
  status: string;
};

export type WorkspaceTicketChangedView = {
  seq: number;
  id: string;
  type: "workspace.ticketChanged";
  occurredAt: string;
  payload: WorkspaceTicketChanged;
};

/** Any JSON value. */
export type JsonValue = string | number | boolean | null | Array<JsonValue> | JsonObject;

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** An event a person or script emitted. */
export type EmittedView = {
  seq: number;
  id: string;
  type: string;
  occurredAt: string;
  payload: JsonObject;
};

/** The first reply of ``events.watch``: the workspace now followed. */
export type Watching = {
  watching: string;
};

export type InstallationView = {
  id: number;
  /** The user, organization or enterprise the app is installed on */
  account: string;
  /** all or selected: which of the account's repositories it reaches */
  repositorySelection: string;
};

export type RepoLinkView = {
  repoId: string;
  repoName: string;
  /** The forge repository, owner/name */
  fullName: string;
  /** given by hand (forge.linkRepo) or read from the origin */
  how: "given" | "origin";
};

export type ForgeStatus = {
  connected: boolean;
  kind?: ("app" | "token") | null;
  host?: string | null;
  webUrl?: string | null;
  apiUrl?: string | null;
  appId?: number | null;
  login?: string | null;
  connectedAt?: string | null;
  connectedBy?: string | null;
  installations: Array<InstallationView>;
  links: Array<RepoLinkView>;
  /** Whether steps get short-lived per-repository tokens (app connections) */
  brokersTokens: boolean;
  /** Whether webhook deliveries are taken */
  webhookSecretSet: boolean;
  /** How often the forge is polled for pull requests */
  pollSeconds: number | null;
  note?: string | null;
  error?: string | null;
  /** The forge's page that creates a GitHub App for Hangar (reads no secret) */
  setupUrl: string;
};

export type CheckView = {
  kind: "checkRun" | "status";
  name: string;
  /** queued, in_progress, completed (check runs); pending, success, failure, error */
  status: string;
  conclusion?: string | null;
  url?: string | null;
};

export type PullFileView = {
  filename: string;
  /** added, removed, modified, renamed... */
  status: string;
  additions: number;
  deletions: number;
  /** The file's unified diff hunks (absent for binaries) */
  patch: string | null;
  /** The patch was cut: at 100,000 characters, or where the pull request's 2,000,000 characters of patches in all ran out */
  patchTruncated: boolean;
};

export type PullView = {
  id: string;
  repoId: string;
  /** The forge repository, owner/name */
  fullName: string;
  number: number;
  /** The pull request's space */
  spaceId: string;
  title: string;
  author: string;
  /** vanished: the forge answers 404 for it now (what it said last is kept) */
  state: "open" | "closed" | "merged" | "vanished";
  headSha: string;
  /** The pull request on the forge */
  htmlUrl: string;
  /** When the forge last answered for it */
  syncedAt: string;
  error?: string | null;
  body: string;
  draft: boolean;
  baseRef: string;
  baseSha: string;
  headRef: string;
  files: Array<PullFileView>;
  /** The pull request has more files than the 300 kept */
  filesTruncated: boolean;
  checks: Array<CheckView>;
};

export type PullSummary = {
  id: string;
  repoId: string;
  /** The forge repository, owner/name */
  fullName: string;
  number: number;
  /** The pull request's space */
  spaceId: string;
  title: string;
  author: string;
  /** vanished: the forge answers 404 for it now (what it said last is kept) */
  state: "open" | "closed" | "merged" | "vanished";
  headSha: string;
  /** The pull request on the forge */
  htmlUrl: string;
  /** When the forge last answered for it */
  syncedAt: string;
  error?: string | null;
};

export type PullList = {
  pulls: Array<PullSummary>;
};

export type ReviewTemplate = {
  /** The built-in review template for these reviewers: save it with pipelines.templates.create */
  template: Record<string, unknown>;
  /** The trigger kind that starts it when a pull request is opened or pushed to */
  trigger: string;
  /** What a run's payload holds (pipelines.runs.start by hand: repo_id, repo_full_name, pr_number, optionally head_sha) */
  stateKeys: Array<string>;
};

export type PollingView = {
  /** How often the forge is polled; absent: not polled */
  seconds: number | null;
};

export type WebhookView = {
  /** Where the forge delivers this workspace's webhooks (content type JSON) */
  url: string;
  /** Whether a webhook secret is stored (it is never shown) */
  secretSet: boolean;
  /** The events to subscribe the webhook to */
  events: Array<string>;
};

export type GuardrailPolicy = {
  readOnly: boolean;
  askFirst: Array<string>;
};

export type ActionItemTicket = {
  actionItemId: string;
  ticketId: string;
  created: boolean;
};

export type MeetingView = {
  id: string;
  title: string;
  startedAt: string;
  participants: Array<string>;
  createdBy: string;
  createdAt: string;
  playback: boolean;
  playbackBytes: number | null;
};

export type MeetingDeleted = {
  meetingId: string;
};

export type ActionItemView = {
  id: string;
  text: string;
  owner: string | null;
  due: string | null;
  ticketId: string | null;
  createdAt: string;
};

export type ChannelView = {
  id: string;
  label: string;
  uploadedBytes: number;
  sourceFormat: string;
  seconds: number;
  createdBy: string;
  createdAt: string;
};

export type DecisionView = {
  text: string;
  createdAt: string;
};

export type NotesView = {
  summary: string;
  enhancedNotes: string;
  runId: string | null;
  createdAt: string;
};

export type SegmentView = {
  start: number;
  end: number;
  speaker: string;
  text: string;
};

export type MeetingDetail = {
  meeting: MeetingView;
  transcript: Array<SegmentView>;
  channels: Array<ChannelView>;
  notes: Array<NotesView>;
  actionItems: Array<ActionItemView>;
  decisions: Array<DecisionView>;
};

export type TranscriptImported = {
  meetingId: string;
  segments: number;
  speakers: Array<string>;
};

export type MeetingList = {
  meetings: Array<MeetingView>;
};

export type NotesTemplate = {
  /** The built-in meeting notes template for this agent: save it with pipelines.templates.create */
  template: Record<string, unknown>;
  /** What a run's payload holds: meeting_id */
  stateKeys: Array<string>;
};

export type ProfileView = {
  id: string;
  userId: string;
  label: string;
  dimensions: number;
  consentedAt: string;
  createdBy: string;
};

export type ProfileDeleted = {
  profileId: string;
};

export type ProfileList = {
  profiles: Array<ProfileView>;
};

export type SpeakersRelabelled = {
  meetingId: string;
  segments: number;
};

export type MemberView = {
  userId: string;
  displayName: string;
  email: string | null;
  role: string;
};

export type UserRef = {
  userId: string;
};

export type MemberRoleSet = {
  userId: string;
  role: string;
};

export type MessageList = {
  messages: Array<MessageView>;
};

export type NodeView = {
  key: string;
  title: string;
  description: string;
  dependsOn: Array<string>;
  agentId: string | null;
  subTicketId: string | null;
  approved: boolean;
  state: string;
  output: unknown;
  error: string | null;
};

export type OrchestrationView = {
  id: string;
  ticketId: string;
  status: string;
  agentId: string;
  plannerAgentId: string;
  synthesisAgentId: string;
  repoIds: Array<string>;
  nodes: Array<NodeView>;
  planRunId: string | null;
  workRunId: string | null;
  spaceId: string | null;
  deliverable: string | null;
  error: string | null;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
};

export type BodyInfo = {
  key: string;
  summary: string;
  config: Array<BodySetting>;
  resumes: boolean;
  honoursDryRun: boolean;
};

export type BodySetting = {
  name: string;
  doc: string;
  required: boolean;
  /** the kind of workspace record the setting names by id (an editor offers them) */
  refers: ("agent" | "team" | "space" | "repo" | "template") | null;
};

export type BodyList = {
  bodies: Array<BodyInfo>;
};

export type Emitted = {
  seq: number;
  id: string;
};

export type PipelinesRunsCancelRunStatus = "running" | "suspended" | "completed" | "failed" | "cancelled";

export type StepState = {
  status: StepStatus;
  attempts: number;
  error: string | null;
};

export type StepStatus = "pending" | "running" | "suspended" | "completed" | "failed" | "skipped" | "timedOut" | "cancelled";

/** The command line's ``--json`` shape (CONTRACTS §5). */
export type RunSnapshot = {
  runId: string;
  status: PipelinesRunsCancelRunStatus;
  state: Record<string, unknown>;
  steps: { [key: string]: StepState };
};

/** A step waiting for an agent's decision (an approval gate): the agent, the space where it decides, and the output its ``submit_output`` must match. A person decides by telling that agent there. */
export type ApprovalWait = {
  agentId: string;
  spaceId: string;
  outputSchema: Record<string, unknown>;
};

export type PipelinesRunsGetRunStatus = "running" | "suspended" | "completed" | "failed" | "cancelled";

export type StepDetail = {
  status: StepStatus;
  attempts: number;
  error: string | null;
  stepId: string;
  label: string;
  routeKey: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
  retryAt: string | null;
  suspendedOn: Suspension | null;
  deadline: string | null;
  progress: Record<string, unknown> | null;
  approval: ApprovalWait | null;
};

export type Suspension = {
  eventType: string | null;
  taskIds: Array<string>;
};

export type TriggerOfRun = {
  kind: string;
  id: string | null;
};

export type RunDetail = {
  runId: string;
  templateId: string;
  status: PipelinesRunsGetRunStatus;
  trigger: TriggerOfRun;
  dryRun: boolean;
  parentRunId: string | null;
  error: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
  payload: Record<string, unknown>;
  state: Record<string, unknown>;
  steps: Array<StepDetail>;
  template: Record<string, unknown>;
};

export type PipelinesRunsListRunStatus = "running" | "suspended" | "completed" | "failed" | "cancelled";

export type RunSummary = {
  runId: string;
  templateId: string;
  status: PipelinesRunsListRunStatus;
  trigger: TriggerOfRun;
  dryRun: boolean;
  parentRunId: string | null;
  error: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
};

export type RunList = {
  runs: Array<RunSummary>;
};

export type RunStarted = {
  runId: string;
};

export type PipelinesRunsWaitRunStatus = "running" | "suspended" | "completed" | "failed" | "cancelled";

export type PipelinesRunsWatchRunStatus = "running" | "suspended" | "completed" | "failed" | "cancelled";

export type StepChange = {
  status: StepStatus;
  attempts: number;
  error: string | null;
  stepId: string;
};

/** An event of ``pipelines.runs.watch``: step runs of one run that changed. */
export type StepsChanged = {
  runId: string;
  status: PipelinesRunsWatchRunStatus;
  steps: Array<StepChange>;
};

export type TemplateSaved = {
  id: string;
  warnings: Array<string>;
};

export type Deleted = {
  deleted: string;
};

export type TemplateDetail = {
  template: Record<string, unknown>;
  warnings: Array<string>;
};

export type TemplateSummary = {
  id: string;
  name: string;
  steps: number;
  createdAt: string;
  updatedAt: string;
};

export type TemplateList = {
  templates: Array<TemplateSummary>;
};

export type TemplateCheck = {
  valid: boolean;
  problems: Array<string>;
  warnings: Array<string>;
};

export type TriggerView = {
  id: string;
  templateId: string;
  kind: "manual" | "event" | "schedule" | "pullRequest";
  eventType: string | null;
  cron: string | null;
  payload: Record<string, unknown>;
  enabled: boolean;
  lastFiredAt: string | null;
  nextFireAt: string | null;
};

export type TriggerList = {
  triggers: Array<TriggerView>;
};

export type RepoView = {
  id: string;
  name: string;
  sourceKind: string;
  source: string;
  defaultBranch: string;
  createdAt: string;
};

export type RepoList = {
  repos: Array<RepoView>;
};

export type RepoRemoved = {
  removed: string;
};

export type ActionLogEntry = {
  seq: number;
  at: string;
  principal: string;
  verb: string;
  outcome: string;
  details: Record<string, unknown>;
};

export type ClipboardGrantRow = {
  id: string;
  userId: string;
  displayName: string;
  direction: "hostToRig" | "rigToHost";
  grantedAt: string;
  expiresAt: string | null;
  always: boolean;
};

/** One person's clipboard crossing: what each direction does by default, and their active grants. */
export type ClipboardPolicy = {
  defaults: Record<string, "allow" | "ask">;
  grants: Array<ClipboardGrantRow>;
};

export type DevDomainRow = {
  domain: string;
  spaceId: string;
  rigId: string;
  guestPort: number;
  createdBy: string;
  createdAt: string;
};

export type DevDomainList = {
  spaceId: string;
  domains: Array<DevDomainRow>;
  https: boolean;
  httpsUnavailableReason: string | null;
};

export type ExecOutput = {
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  truncated: boolean;
};

export type LaneUrl = {
  url: string;
  path: string;
  sig: string;
  expiresAt: number;
};

export type CloseReason = "requested" | "idleTimeout" | "ttlExpired" | "conversationEnded" | "workspaceGone" | "serverShutdown" | "backendFailure";

/** The person holding control of a rig. */
export type Controller = {
  userId: string;
  displayName: string;
};

/** A rig's screen in pixels. */
export type DisplaySize = {
  width: number;
  height: number;
};

export type Phase = "provisioning" | "ready" | "parked" | "closing" | "closed" | "failed";

export type Surface = "terminal" | "browser" | "computer" | "mobile" | "simulator";

/** One rig of ``rig_list``. */
export type RigRow = {
  rigId: string;
  spaceId: string;
  surface: Surface;
  engine: string | null;
  backend: string;
  status: Phase;
  statusDetail: string;
  display: DisplaySize | null;
  controller: Controller | null;
  closeReason: CloseReason | null;
  memoryMb: number;
  residentMb: number;
  createdAt: string;
  closedAt: string | null;
};

export type HostsGranted = {
  rigId: string;
  granted: Array<string>;
};

/** One top-level page of a browser rig's session, as its person sees it: ``url`` and ``title`` are the page's own text. ``stale``: the engine cannot read a page it is not on (engine C), so this is what it was when last current. */
export type PageRow = {
  pageId: string;
  url: string;
  title: string;
  current: boolean;
  stale: boolean;
};

/** What ``rig.navigate`` answers: the session's pages after the move (the current one marked), and the HTTP status of the document a navigation loaded where the engine reports it. */
export type BrowserPages = {
  rigId: string;
  engine: string;
  status: number | null;
  pages: Array<PageRow>;
};

export type RigOpened = {
  rigId: string;
  phase: Phase;
  statusDetail: string;
};

/** A listening guest port: forwarded to a port of the rig's own host loopback address (and shared on the LAN on request), or not. A forward is opened at ``http://<hostAddress>:<hostPort>/`` on the server's host. */
export type PortRow = {
  guestPort: number;
  forwarded: boolean;
  hostAddress: string | null;
  hostPort: number | null;
  lanPort: number | null;
};

export type RigPorts = {
  rigId: string;
  limit: number;
  ports: Array<PortRow>;
};

export type ControlState = {
  rigId: string;
  controller: string | null;
};

/** A connection the rig's egress gate refused, as people watching the rig are told of it: ``host`` is what the rig asked for (a name, or an address and port), ``rule`` the rule that said no (``allowlist``: the name is not on the rig's allowlist, which an admin may extend with ``rig.grantHosts``; ``address``: the name resolves only to addresses rigs may not reach; ``port``: only ports 80 and 443 leave a rig; ``direct``: a connection or datagram that went around the gate; ``protocol``: no name to check; ``limit``: too many connections at once; ``unreachable``: the host did not answer; ``server``: the rig's door to the server passes only its MCP endpoint), ``reason`` the gate's words, ``count`` how often since it was first told (``at``, the last time). */
export type EgressRefusal = {
  host: string;
  kind: string;
  rule: "allowlist" | "address" | "port" | "direct" | "protocol" | "limit" | "unreachable" | "server";
  reason: string;
  grantable: boolean;
  count: number;
  at: string;
};

/** The first reply of ``rig.watch``; its activity events follow. */
export type RigSnapshot = {
  rigId: string;
  surface: Surface;
  phase: Phase;
  statusDetail: string;
  controller: string | null;
  ports: Array<PortRow>;
  egress: Array<EgressRefusal>;
};

/** A person (``controller``, a user id) took control, or it was handed back (None). */
export type ControlNotice = {
  type: "control";
  controller: string | null;
};

/** An admin let the rig reach more hosts. */
export type EgressGrantedNotice = {
  type: "egressGranted";
  hosts: Array<string>;
};

/** The rig's egress gate refused a connection. */
export type EgressNotice = {
  type: "egress";
  refusal: EgressRefusal;
};

/** Someone (``by``, a principal label) runs ``command`` in the rig. */
export type ExecNotice = {
  type: "exec";
  by: string;
  command: string;
};

/** How the command ended; the output is the tail of each stream. */
export type ExecResultNotice = {
  type: "execResult";
  exitCode: number;
  timedOut: boolean;
  stdout: string;
  stderr: string;
};

/** The rig moved to ``phase``; ``detail`` is its status line, ``reason`` why it closed or failed. */
export type PhaseNotice = {
  type: "phase";
  phase: Phase;
  detail: string;
  reason: string | null;
};

/** The rig's listening ports changed: all of them, forwarded first. */
export type PortsNotice = {
  type: "ports";
  ports: Array<PortRow>;
};

/** A step of a long boot (the terminal image's build, the enclosure's start): ``step`` of ``steps``. */
export type ProgressNotice = {
  type: "progress";
  detail: string;
  step: number;
  steps: number;
};

export type RigClosed = {
  rigId: string;
  phase: Phase;
  closeReason: CloseReason | null;
};

/** The last check of a ready pack against its archive: ``current`` (up to date at ``checkedAt``), ``refreshing`` (a new version is being built; the current one serves until it is ready), ``refreshed`` (the new version took over at ``finishedAt``) or ``failed`` (the check or the rebuild failed: ``error``; the pack in place keeps serving). ``newer`` lists the suites released since the pack was built. */
export type PackRefreshView = {
  state: "current" | "refreshing" | "refreshed" | "failed";
  checkedAt: string | null;
  finishedAt: string | null;
  error: string | null;
  newer: Array<string>;
};

/** An image pack: ``ready``, ``missing``, ``building`` (with its step, ``stepIndex`` of ``steps`` when the build numbers them) or ``failed`` (with the error of the last build). A ready pack says when its current version was built (``builtAt``) and from which archive release (``archiveDate``: the newest ``Date`` of the suites it was built from, each in ``archiveDates``); while it is built again its step shows and it stays ready. */
export type PackView = {
  name: string;
  surface: string;
  revision: string;
  state: "ready" | "missing" | "building" | "failed";
  step: string | null;
  stepIndex: number;
  steps: number;
  error: string | null;
  /** what a person reads: Terminal image, Chromium browser image, … */
  label: string;
  /** a browser pack's engine (engine-a, …) */
  engine: string | null;
  builtAt: string | null;
  archiveDate: string | null;
  archiveDates: Record<string, string>;
  refresh: PackRefreshView | null;
};

/** ``rigs.watchPacks``: the image packs, first as the reply, then again as each event after a change, and the hours between their checks against the archives (``rigs.packRefreshHours``; 0: never). */
export type PackList = {
  packs: Array<PackView>;
  refreshHours: number;
};

/** An imported desktop image for full-VM rigs (``rigs.images``, ``rigs.importImage``): its id, what the server owner called it, its SHA-256, the file's and the guest disk's sizes in bytes, and how its boot check went (the accelerator, the seconds from start to the guest agent's answer). */
export type ImageView = {
  imageId: string;
  name: string;
  sha256: string;
  fileBytes: number;
  virtualBytes: number;
  importedAt: string;
  accelerator: string;
  bootSeconds: number;
};

/** An enclosure user code runs in (``scope`` names what it runs for, ``pipelineRun:<runId>`` for one): it holds its ceiling, ``memoryMb``, in the budget; ``busy`` while a job runs in it. */
export type EnclosureView = {
  scope: string;
  workspaceId: string;
  memoryMb: number;
  residentMb: number;
  busy: boolean;
};

/** ``heldMb`` is what counts against ``memoryBudgetMb``: rigs' resident memory (their ceiling while booting) and each enclosure's ceiling; ``residentMb`` is what rigs and enclosures hold now. */
export type HostStatus = {
  backend: string;
  unavailableReason: string | null;
  memoryBudgetMb: number;
  heldMb: number;
  residentMb: number;
  liveRigs: number;
  enclosures: Array<EnclosureView>;
};

/** A persisted event of an agent run: its sequence number in the workspace, type, time and payload. */
export type RunEventFrame = AgentsReasoningFinishedInRun | AgentsReasoningStartedInRun | AgentsRunFinishedInRun | AgentsRunStartedInRun | AgentsTextDeltaInRun | AgentsToolCallFinishedInRun | AgentsToolCallStartedInRun | AgentsTurnFinishedInRun | AgentsTurnStartedInRun | AgentsTurnWaitingInRun;

export type AgentsReasoningFinishedInRun = {
  seq: number;
  type: "agents.reasoningFinished";
  at: string;
  payload: AgentsReasoningFinished;
};

export type AgentsReasoningStartedInRun = {
  seq: number;
  type: "agents.reasoningStarted";
  at: string;
  payload: AgentsReasoningStarted;
};

export type AgentsRunFinishedInRun = {
  seq: number;
  type: "agents.runFinished";
  at: string;
  payload: AgentsRunFinished;
};

export type AgentsRunStartedInRun = {
  seq: number;
  type: "agents.runStarted";
  at: string;
  payload: AgentsRunStarted;
};

export type AgentsTextDeltaInRun = {
  seq: number;
  type: "agents.textDelta";
  at: string;
  payload: AgentsTextDelta;
};

export type AgentsToolCallFinishedInRun = {
  seq: number;
  type: "agents.toolCallFinished";
  at: string;
  payload: AgentsToolCallFinished;
};

export type AgentsToolCallStartedInRun = {
  seq: number;
  type: "agents.toolCallStarted";
  at: string;
  payload: AgentsToolCallStarted;
};

export type AgentsTurnFinishedInRun = {
  seq: number;
  type: "agents.turnFinished";
  at: string;
  payload: AgentsTurnFinished;
};

export type AgentsTurnStartedInRun = {
  seq: number;
  type: "agents.turnStarted";
  at: string;
  payload: AgentsTurnStarted;
};

export type AgentsTurnWaitingInRun = {
  seq: number;
  type: "agents.turnWaiting";
  at: string;
  payload: AgentsTurnWaiting;
};

export type RunEvents = {
  events: Array<RunEventFrame>;
};

/** One agent run, built from a ``Run`` record. */
export type RunView = {
  id: string;
  agentId: string;
  spaceId: string;
  status: RunStatus;
  outcome: RunOutcome | null;
  error: string | null;
  prompt: string;
  outputSchema: Record<string, unknown> | null;
  output: unknown;
  hasOutput: boolean;
  outputError: string | null;
  turns: number;
  dispatchedBy: string;
  createdAt: string;
  finishedAt: string | null;
};

export type RunsListRunList = {
  runs: Array<RunView>;
};

export type ServerInfo = {
  name: string;
  version: string;
  origin: string;
  publicUrl: string | null;
  webClientUrl: string | null;
  pairingEnabled: boolean;
};

/** What one retention pass deleted in one database (``server`` or a workspace's id). */
export type PrunedDatabase = {
  database: string;
  events: number;
  audit: number;
  error: string | null;
};

export type RetentionPass = {
  startedAt: string;
  finishedAt: string | null;
  databases: Array<PrunedDatabase>;
};

/** The retention settings as they bind now (0: kept for ever) and the last pass. */
export type RetentionView = {
  eventsDays: number;
  auditDays: number;
  lastPass: RetentionPass | null;
};

export type WorkspaceCreators = {
  who: "serverOwner" | "members" | "anyone";
};

/** Bytes of the data directory: the database's, and every other file's (symlinks counted as themselves). */
export type SpaceUsed = {
  databaseBytes: number;
  filesBytes: number;
};

export type WorkspaceStorage = {
  databaseBytes: number;
  filesBytes: number;
  id: string;
  name: string;
};

/** What the data directory holds per workspace and for the server itself; ``complete`` is false when the walk ran out of its time and some files are not counted. */
export type StorageView = {
  server: SpaceUsed;
  workspaces: Array<WorkspaceStorage>;
  complete: boolean;
};

export type ServerUser = {
  id: string;
  email: string | null;
  displayName: string;
  active: boolean;
  ssoIssuer: string | null;
};

/** A declared setting: what it is for and its stored value (null while it keeps its default). */
export type SettingView = {
  summary: string;
  value: unknown;
};

export type SettingSaved = {
  key: string;
  value: unknown;
};

export type FindingView = {
  kind: string;
  severity: string;
  message: string;
  file: string | null;
  line: number | null;
};

export type SkillView = {
  id: string;
  name: string;
  description: string;
  kind: string;
  source: string;
  indexUrl: string | null;
  url: string | null;
  digest: string;
  size: number;
  verdict: string;
  findings: number;
  scannedAt: string | null;
  overridden: boolean;
  overrideBy: string | null;
  overrideReason: string | null;
  loaded: boolean;
  installedBy: string;
  installedAt: string;
};

export type SkillFindings = {
  skill: SkillView;
  findings: Array<FindingView>;
};

export type SkillList = {
  skills: Array<SkillView>;
};

/** How far checking out a space's repos got: ``state``, the step under way, the error that stopped it. */
export type Provisioning = {
  state: string;
  step: string | null;
  error: string | null;
};

export type SpaceView = {
  id: string;
  kind: string;
  mode: string;
  title: string;
  hidden: boolean;
  createdBy: string;
  provisioning: Provisioning;
  createdAt: string;
  updatedAt: string;
  archivedAt: string | null;
};

/** A worktree in a space's working folder, with its repo's name (null once the repo is gone). */
export type SpaceRepo = {
  id: string;
  repoId: string;
  branch: string;
  workBranch: string;
  path?: string | null;
  spaceId: string | null;
  ticketId: string | null;
  prKey: string | null;
  createdAt: string;
  repoName: string | null;
};

/** A space with its working folder (hidden from guests) and the worktrees checked out in it. */
export type SpaceDetail = {
  id: string;
  kind: string;
  mode: string;
  title: string;
  hidden: boolean;
  createdBy: string;
  provisioning: Provisioning;
  createdAt: string;
  updatedAt: string;
  archivedAt: string | null;
  folder?: string | null;
  repos: Array<SpaceRepo>;
};

export type SpaceList = {
  spaces: Array<SpaceView>;
};

/** The first reply of ``spaces.watch``: the space as it is now. */
export type SpaceFollowed = {
  space: SpaceView;
};

export type AgentsReasoningFinishedInSpace = {
  seq: number;
  type: "agents.reasoningFinished";
  at: string;
  payload: AgentsReasoningFinished;
};

export type AgentsReasoningStartedInSpace = {
  seq: number;
  type: "agents.reasoningStarted";
  at: string;
  payload: AgentsReasoningStarted;
};

export type AgentsRunFinishedInSpace = {
  seq: number;
  type: "agents.runFinished";
  at: string;
  payload: AgentsRunFinished;
};

export type AgentsRunStartedInSpace = {
  seq: number;
  type: "agents.runStarted";
  at: string;
  payload: AgentsRunStarted;
};

export type AgentsTextDeltaInSpace = {
  seq: number;
  type: "agents.textDelta";
  at: string;
  payload: AgentsTextDelta;
};

export type AgentsToolCallFinishedInSpace = {
  seq: number;
  type: "agents.toolCallFinished";
  at: string;
  payload: AgentsToolCallFinished;
};

export type AgentsToolCallStartedInSpace = {
  seq: number;
  type: "agents.toolCallStarted";
  at: string;
  payload: AgentsToolCallStarted;
};

export type AgentsTurnFinishedInSpace = {
  seq: number;
  type: "agents.turnFinished";
  at: string;
  payload: AgentsTurnFinished;
};

export type AgentsTurnStartedInSpace = {
  seq: number;
  type: "agents.turnStarted";
  at: string;
  payload: AgentsTurnStarted;
};

export type AgentsTurnWaitingInSpace = {
  seq: number;
  type: "agents.turnWaiting";
  at: string;
  payload: AgentsTurnWaiting;
};

export type ForgePullRequestInSpace = {
  seq: number;
  type: "forge.pullRequest";
  at: string;
  payload: ForgePullRequest;
};

export type RigsClosedInSpace = {
  seq: number;
  type: "rigs.closed";
  at: string;
  payload: RigsClosed;
};

export type RigsControlChangedInSpace = {
  seq: number;
  type: "rigs.controlChanged";
  at: string;
  payload: RigsControlChanged;
};

export type RigsDevDomainChangedInSpace = {
  seq: number;
  type: "rigs.devDomainChanged";
  at: string;
  payload: RigsDevDomainChanged;
};

export type RigsReapedInSpace = {
  seq: number;
  type: "rigs.reaped";
  at: string;
  payload: RigsReaped;
};

export type WorkspaceMessagePostedInSpace = {
  seq: number;
  type: "workspace.messagePosted";
  at: string;
  payload: WorkspaceMessagePosted;
};

export type WorkspaceSpaceCreatedInSpace = {
  seq: number;
  type: "workspace.spaceCreated";
  at: string;
  payload: WorkspaceSpaceCreated;
};

export type WorkspaceSpaceProvisioningChangedInSpace = {
  seq: number;
  type: "workspace.spaceProvisioningChanged";
  at: string;
  payload: WorkspaceSpaceProvisioningChanged;
};

export type WorkspaceSpaceUpdatedInSpace = {
  seq: number;
  type: "workspace.spaceUpdated";
  at: string;
  payload: WorkspaceSpaceUpdated;
};

/** An event of ``spaces.watch``: every declared event whose payload names the space (``spaceId``): its messages, its provisioning, its agents' turns, its rigs. */
export type SpaceEventFrame = AgentsReasoningFinishedInSpace | AgentsReasoningStartedInSpace | AgentsRunFinishedInSpace | AgentsRunStartedInSpace | AgentsTextDeltaInSpace | AgentsToolCallFinishedInSpace | AgentsToolCallStartedInSpace | AgentsTurnFinishedInSpace | AgentsTurnStartedInSpace | AgentsTurnWaitingInSpace | ForgePullRequestInSpace | RigsClosedInSpace | RigsControlChangedInSpace | RigsDevDomainChangedInSpace | RigsReapedInSpace | WorkspaceMessagePostedInSpace | WorkspaceSpaceCreatedInSpace | WorkspaceSpaceProvisioningChangedInSpace | WorkspaceSpaceUpdatedInSpace;

/** The values an identity provider's administrator registers, built from the one origin the sign-ins use. ``originSource`` says where that origin comes from: ``publicUrl`` (``--public-url``), ``listener`` (the server's own host and port), or ``request`` (neither names one: the sign-ins follow the address each browser uses, and these values are this machine's loopback address). */
export type SsoEndpoints = {
  origin: string;
  originSource: "publicUrl" | "listener" | "request";
  samlEntityId: string;
  samlAcsUrl: string;
  samlMetadataUrl: string;
  oidcRedirectUri: string;
  scimBaseUrl: string;
};

/** An OIDC record as replies show it: the client secret only as a presence flag. */
export type OidcView = {
  enabled: boolean;
  defaultRole: string;
  groupRoleMap: Record<string, string>;
  autoMember: boolean;
  allowJit: boolean;
  issuer: string | null;
  clientId: string | null;
  groupsClaim: string;
  scopes: string;
  clientSecretPresent: boolean;
};

export type SamlConnection = {
  enabled: boolean;
  defaultRole: string;
  groupRoleMap: Record<string, string>;
  autoMember: boolean;
  allowJit: boolean;
  idpMetadataXml: string | null;
  spEntityId: string | null;
  emailAttribute: string;
  displayNameAttribute: string;
  groupsAttribute: string;
  clockSkewSeconds: number;
  allowIdpInitiated: boolean;
  wantResponseSigned: boolean;
};

export type ScimToken = {
  token: string;
};

/** Bounds on a device credential in minutes; 0 means unset. */
export type SessionPolicyView = {
  maxAgeMinutes: number;
  idleTimeoutMinutes: number;
};

export type PairingState = {
  pairingEnabled: boolean;
};

export type SpMetadata = {
  origin: string;
  entityId: string;
  acsUrl: string;
  xml: string;
};

export type KindStatus = {
  enabled: boolean;
  configured: boolean;
};

export type SsoStatus = {
  saml: KindStatus;
  oidc: KindStatus;
  scimTokenPresent: boolean;
  origin: string;
  pairingEnabled: boolean;
};

export type ConnectionFailed = {
  ok: false;
  kind: string;
  error: FailureReason;
};

export type FailureReason = {
  code: string;
  message: string;
};

/** The issuer's discovery document and signing keys were fetched. */
export type OidcConnectionOk = {
  ok: true;
  kind: "oidc";
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  jwksUri: string;
  signingKeys: number;
};

/** The IdP metadata parses and an authentication request can be built from it. */
export type SamlConnectionOk = {
  ok: true;
  kind: "saml";
  idpEntityId: string;
  ssoUrl: string;
  certificates: number;
  spEntityId: string;
  requestId: string;
  redirectUrl: string;
};

export type TeamView = {
  id: string;
  name: string;
  leaderId: string | null;
  dispatchMode: string;
  memberIds: Array<string>;
  createdAt: string;
  updatedAt: string;
};

export type TeamDeleted = {
  deleted: boolean;
};

export type TeamDispatch = {
  runIds: Array<string>;
  dispatchMode: string;
};

export type TeamList = {
  teams: Array<TeamView>;
};

export type TicketView = {
  id: string;
  title: string;
  description: string;
  reporter: string;
  status: string;
  parentId: string | null;
  spaceId: string | null;
  createdAt: string;
  updatedAt: string;
};

/** How many tickets went: the one named and its sub-tickets. */
export type TicketsDeleted = {
  deleted: number;
};

export type TicketDetail = {
  id: string;
  title: string;
  description: string;
  reporter: string;
  status: string;
  parentId: string | null;
  spaceId: string | null;
  createdAt: string;
  updatedAt: string;
  subTickets: Array<TicketView>;
};

export type TicketList = {
  tickets: Array<TicketView>;
};

/** A workspace with the caller's role in it. */
export type WorkspaceRole = {
  id: string;
  name: string;
  role: string;
};

/** The calling user, through the device credential they called with. */
export type Me = {
  id: string;
  email: string | null;
  displayName: string;
  isServerOwner: boolean;
  deviceId: string;
  workspaces: Array<WorkspaceRole>;
};

export type WorkspaceRef = {
  id: string;
  name: string;
};

export type WorkspaceDeletion = {
  workspace_id: string;
  name: string;
  /** Who asked (user:<id>). */
  requestedBy: string;
  /** deleting (under way, finished at the next start if interrupted) or deleted */
  state: string;
  /** The last step done: recorded, stopped, files, deleted. */
  step: string;
  startedAt: string;
  finishedAt: string | null;
};

export type ExportLink = {
  url: string;
  expiresAt: string;
};

export type WorkspaceEntry = {
  id: string;
  name: string;
  role: string;
  createdAt: string;
};

/** A checked-out worktree and what owns it (a space, a ticket, or a PR editor by ``prKey``). */
export type WorktreeView = {
  id: string;
  repoId: string;
  branch: string;
  workBranch: string;
  path?: string | null;
  spaceId: string | null;
  ticketId: string | null;
  prKey: string | null;
  createdAt: string;
};

/** What a worktree cleanup released (or, in a dry run, would release). */
export type CleanupView = {
  mode: string;
  dryRun: boolean;
  worktrees: Array<string>;
  folders: Array<string>;
  summary: string;
};

export type WorktreeList = {
  worktrees: Array<WorktreeView>;
};

// Arguments and results, one pair per op

/** Create an agent; an ``openai`` adapter's ``apiKey`` goes to the secrets file and is never returned. A workspace admin's ``baseUrl`` must be one the server may reach for them: a public address, or a host the server owner names (``trustedModelHosts``); the server owner's may be any. */
export type AgentsCreateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  name: string;
  role?: string;
  systemPrompt?: string;
  adapter: Record<string, unknown>;
};
export type AgentsCreateResult = AgentView;

/** Delete an agent and its stored key; refused while it has runs in progress or belongs to a team. */
export type AgentsDeleteArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  agentId: string;
};
export type AgentsDeleteResult = AgentDeleted;

/** The agent a new conversation wakes: the chief-executive agent, else the first agent, else none. */
export type AgentsFrontDoorArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
};
export type AgentsFrontDoorResult = FrontDoor;

/** One agent (``hasApiKey`` instead of the key). */
export type AgentsGetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  agentId: string;
};
export type AgentsGetResult = AgentView;

/** List the workspace's agents. */
export type AgentsListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
};
export type AgentsListResult = AgentList;

/** Dispatch an agent into a space with a prompt; returns at once with the run id (follow it with ``spaces.watch`` or ``runs.get``). */
export type AgentsRunArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  agentId: string;
  spaceId: string;
  prompt: string;
  outputSchema?: Record<string, unknown> | null;
  maxTurns?: number | null;
};
export type AgentsRunResult = DispatchedRun;

/** Dispatch several agents into a space on one prompt (a message mentioning each of them): the prompt is posted once and every agent runs on it; returns at once with the runs, in the order asked. */
export type AgentsRunManyArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  agentIds: Array<string>;
  spaceId: string;
  prompt: string;
  maxTurns?: number | null;
};
export type AgentsRunManyResult = DispatchedRuns;

/** Edit an agent; an adapter given without ``apiKey`` keeps the stored key. A ``baseUrl`` is held to the rules of ``agents.create`` for whoever saves it. */
export type AgentsUpdateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  agentId: string;
  name?: string | null;
  role?: string | null;
  systemPrompt?: string | null;
  adapter?: Record<string, unknown> | null;
};
export type AgentsUpdateResult = AgentView;

/** Audit rows of the workspace, oldest first (``newest``: newest first), filtered by target, action, principal, door and time. */
export type AuditListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** at or after this time */
  since?: string | null;
  /** before this time */
  until?: string | null;
  target?: string | null;
  action?: string | null;
  /** as rows write it: user:<id> or agent:<id> */
  principal?: string | null;
  /** the door of the call that wrote the row; none: work no caller started */
  door?: ("socket" | "mcp" | "none") | null;
  limit?: number;
  /** the last rows that match, newest first */
  newest?: boolean;
};
export type AuditListResult = Array<AuditRow>;

/** Drive a browser rig with one action (navigate, click, fill, extract, screenshot...). Every result carries ``engine``; what the page returns comes fenced as untrusted data. */
export type BrowserUseArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
  action?: unknown;
};
export type BrowserUseResult = Record<string, unknown>;

/** Mint a one-time code (15 minutes) that links the caller's own chat account: send ``/<command> link <code>`` from the chat. A new code replaces the caller's previous one. For people only: an agent has no chat account to link. */
export type ChatBeginUserLinkArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  provider?: string;
};
export type ChatBeginUserLinkResult = LinkCode;

/** The app's bot profile as the provider has it now (its exported manifest). */
export type ChatBotProfileArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  provider?: string;
};
export type ChatBotProfileResult = BotProfileView;

/** Store the provider's credentials for the workspace (write-only) and (re)start its connection. */
export type ChatConnectArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  provider?: string;
  /** Values of the descriptor's fields (botToken, appToken, configRefreshToken); an optional field left empty keeps its stored value */
  credentials: Record<string, unknown>;
};
export type ChatConnectResult = ConnectReply;

/** Create the workspace's app from the bot profile through the provider's manifest API; answers the steps left (install it, make an app-level token, connect). */
export type ChatCreateAppArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  provider?: string;
  appName?: string | null;
  botDisplayName?: string | null;
  description?: string | null;
  agentDescription?: string | null;
  command?: string | null;
  agentEnabled?: boolean | null;
  /** The app configuration refresh token (xoxe...), when none is stored yet; write-only */
  configRefreshToken?: string | null;
};
export type ChatCreateAppResult = CreatedApp;

/** Stop the workspace's connection and delete its stored credentials and unfinished setup. */
export type ChatDisconnectArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  provider?: string;
};
export type ChatDisconnectResult = ChatStatus;

/** The workspace's linked chat members (all providers, or one). */
export type ChatListUserLinksArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  provider?: string | null;
};
export type ChatListUserLinksResult = Array<UserLinkView>;

/** The chat providers this server offers, each with its credential fields, capabilities and the workspace's connection status: the settings screen renders the connect dialog from it. */
export type ChatProvidersArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
};
export type ChatProvidersResult = Array<ProviderEntry>;

/** The provider's address that creates the workspace's app from the bot profile (the given fields over the defaults; an empty one leaves its value). Reads no secret and contacts nobody. */
export type ChatSetupLinkArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  provider?: string;
  appName?: string | null;
  botDisplayName?: string | null;
  description?: string | null;
  agentDescription?: string | null;
  command?: string | null;
  agentEnabled?: boolean | null;
};
export type ChatSetupLinkResult = SetupLink;

/** The workspace's connection to the provider: ``disconnected``, ``connecting``, ``connected`` or ``error`` (with the provider's error), and whether replies can stream. */
export type ChatStatusArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  provider?: string;
};
export type ChatStatusResult = ChatStatus;

/** Remove a member's chat link: a member their own, an admin anyone's. */
export type ChatUnlinkUserArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  provider?: string;
  /** Whose link to remove; the caller's own when absent */
  userId?: string | null;
};
export type ChatUnlinkUserResult = Unlinked;

/** Edit the app's bot profile (an empty field leaves its value); scopes and events are merged, never removed. ``remainingStep`` is present only when the provider wants a reinstall. */
export type ChatUpdateBotProfileArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  provider?: string;
  appName?: string | null;
  botDisplayName?: string | null;
  description?: string | null;
  agentDescription?: string | null;
  command?: string | null;
  agentEnabled?: boolean | null;
};
export type ChatUpdateBotProfileResult = EditedProfile;

/** The roster of linked chat members, then the whole roster again whenever a link is made or removed (in this server or another process sharing its data). */
export type ChatWatchUserLinksArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  provider?: string | null;
};
export type ChatWatchUserLinksResult = UserLinkRoster;
/** What `chat.watchUserLinks` sends after its reply. */
export type ChatWatchUserLinksEvent = UserLinkRoster;

/** What ``name`` calls: each edge's ``target`` is a called name (``code.definition`` finds it). */
export type CodeCalleesArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** A workspace repo (id or name); every indexed repo if absent */
  repoId?: string | null;
  /** At most this many answers (1 to 500) */
  limit?: number;
  /** A symbol's name, plain (parse) or qualified (Parser.parse) */
  name: string;
};
export type CodeCalleesResult = CodeEdges;

/** The calls of ``name``: each edge's ``source`` is the calling symbol. */
export type CodeCallersArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** A workspace repo (id or name); every indexed repo if absent */
  repoId?: string | null;
  /** At most this many answers (1 to 500) */
  limit?: number;
  /** A symbol's name, plain (parse) or qualified (Parser.parse) */
  name: string;
};
export type CodeCallersResult = CodeEdges;

/** Where ``name`` is defined: its definitions (a qualified name narrows them to its container), those in ``path`` first. */
export type CodeDefinitionArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** A workspace repo (id or name); every indexed repo if absent */
  repoId?: string | null;
  /** At most this many answers (1 to 500) */
  limit?: number;
  /** A symbol's name, plain (parse) or qualified (Parser.parse) */
  name: string;
  /** The file asked from: its definitions first */
  path?: string | null;
};
export type CodeDefinitionResult = CodeSymbols;

/** A file's symbols in the order they appear, each with its container. */
export type CodeOutlineArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** A workspace repo (id or name) */
  repoId: string;
  /** A file's path in the repo */
  path: string;
};
export type CodeOutlineResult = CodeSymbols;

/** Where ``name`` is used: the calls, references, imports and inherits that reach it, by file and line. */
export type CodeReferencesArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** A workspace repo (id or name); every indexed repo if absent */
  repoId?: string | null;
  /** At most this many answers (1 to 500) */
  limit?: number;
  /** A symbol's name, plain (parse) or qualified (Parser.parse) */
  name: string;
  /** Which edges count (default: every use, not defines) */
  kinds?: Array<"defines" | "imports" | "calls" | "references" | "inherits">;
};
export type CodeReferencesResult = CodeEdges;

/** Symbols whose name matches ``query``, best first: the exact name, then prefixes, substrings and names holding its letters in order (fuzzy). */
export type CodeSearchArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** A workspace repo (id or name); every indexed repo if absent */
  repoId?: string | null;
  /** At most this many answers (1 to 500) */
  limit?: number;
  /** A name, its prefix, or letters in order */
  query: string;
  /** Only symbols of these kinds */
  kinds?: Array<string>;
};
export type CodeSearchResult = CodeSymbols;

/** The workspace's indexed repos: the commit each graph is of, when it was indexed, and its counts. */
export type CodeStatusArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
};
export type CodeStatusResult = CodeStatus;

/** Drive a desktop rig with one action (screenshot, clicks, keys, typing, clipboard...). Coordinates are guest pixels in the current mode and every screenshot states the display size; what a selection holds comes fenced as untrusted data. */
export type ComputerUseArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
  action?: unknown;
};
export type ComputerUseResult = Record<string, unknown>;

/** The caller's device credentials (never the tokens), with last use and revocation. */
export type DevicesListArgs = Record<string, never>;
export type DevicesListResult = Array<DeviceView>;

/** Mint a single-use 15-minute code that pairs another device to the caller (redeem at POST /auth/pair). Only from the person's own device: a credential issued to an application or an agent, or narrowed, would otherwise turn itself into a whole, lasting credential of the person. */
export type DevicesPairingCodeArgs = Record<string, never>;
export type DevicesPairingCodeResult = OneTimeCode;

/** Rename one of the caller's own active device credentials (the server owner's credentials from ``hangar admin owner-token`` are the owner's own). A credential issued to an application or an agent renames none, itself included: its name is how the person tells it apart when deciding what to revoke. */
export type DevicesRenameArgs = {
  deviceId: string;
  /** 1 to 100 characters, no line breaks */
  name: string;
};
export type DevicesRenameResult = DeviceView;

/** Revoke one of the caller's device credentials; it stops working at once. A credential issued to an application or an agent may revoke only itself (signing out). */
export type DevicesRevokeArgs = {
  deviceId: string;
};
export type DevicesRevokeResult = DeviceRef;

/** Domain events of the workspace after a sequence number, oldest first: the first ``limit``, or the ``last``; optionally only those of some types and those that occurred in a time window. Every space's events are in it, so a credential limited to one space is refused. */
export type EventsListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** at or after this time */
  since?: string | null;
  /** before this time */
  until?: string | null;
  afterSeq?: number;
  types?: Array<string> | null;
  limit?: number;
  /** the last events instead of the first */
  last?: number | null;
};
export type EventsListResult = Array<EventView>;

/** Stream the workspace's domain events as they are published (refused to a credential limited to one space, as ``events.list``). */
export type EventsWatchArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  types?: Array<string> | null;
};
export type EventsWatchResult = Watching;
/** What `events.watch` sends after its reply. */
export type EventsWatchEvent = EventView;

/** Connect the workspace to GitHub (github.com or a GitHub Enterprise Server) as a GitHub App (appId and privateKey: its installations are listed) or with a token. The forge checks the credentials first; they are stored write-only and replace any earlier connection. */
export type ForgeConnectArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** A GitHub Enterprise Server's address; github.com when absent */
  baseUrl?: string | null;
  /** The REST API's address when not the usual one (<baseUrl>/api/v3, api.github.com) */
  apiUrl?: string | null;
  /** The GitHub App's id (with privateKey) */
  appId?: number | null;
  /** The app's private key, PEM; write-only */
  privateKey?: string | null;
  /** A token instead of an app; write-only */
  token?: string | null;
};
export type ForgeConnectResult = ForgeStatus;

/** Forget the workspace's forge credentials and hand-given links; steps get no token from then on. */
export type ForgeDisconnectArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** For the setup link before connecting: a GHES address */
  baseUrl?: string | null;
  /** For the setup link: create the app in this organization */
  org?: string | null;
};
export type ForgeDisconnectResult = ForgeStatus;

/** Link a workspace repo to its forge repository (owner/name; an app must be installed on it), or with no fullName drop the hand-given link so the repo's origin decides again. */
export type ForgeLinkRepoArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** The workspace repo (id or name) */
  repoId: string;
  /** The forge repository, owner/name; absent: the origin's link counts again */
  fullName?: string | null;
};
export type ForgeLinkRepoResult = ForgeStatus;

/** Open a pull request's space by hand, or refresh it: the forge is asked now. A pull request opened or whose head moved fires the workspace's pullRequest triggers, as a webhook would. */
export type ForgeOpenPrArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** The workspace repo (id or name), linked to its forge repository */
  repoId: string;
  /** The pull request's number on the forge */
  number: number;
};
export type ForgeOpenPrResult = PullView;

/** One pull request (by repoId and number, or by its space): title, author, branches, state, its files with their patches and its head's checks, as the forge said last, and its link on the forge. */
export type ForgePrArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** The workspace repo (id or name), with number */
  repoId?: string | null;
  /** The pull request's number, with repoId */
  number?: number | null;
  /** Or the pull request's space */
  spaceId?: string | null;
};
export type ForgePrResult = PullView;

/** The workspace's pull requests Hangar knows (a webhook, a poll or a person brought them), newest first per repository, each with its space and what the forge said last. */
export type ForgePrsArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** Only this repo's (id or name) */
  repoId?: string | null;
};
export type ForgePrsResult = PullList;

/** The built-in "review a pull request" template for these reviewers (agents or a team): they review the pull request's checkout in parallel, prReview.finalize merges their findings and gives the verdict, and forge.prComment posts one review with inline comments. Save it with pipelines.templates.create, start it by hand with pipelines.runs.start and the state keys, or add a pullRequest trigger. */
export type ForgeReviewTemplateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** Reviewer agents (ids), each a parallel reviewer */
  agentIds?: Array<string>;
  /** A team instead: every member reviews (allParallel) */
  teamId?: string | null;
  /** The id to save the template under */
  templateId?: string;
};
export type ForgeReviewTemplateResult = ReviewTemplate;

/** Poll the forge for pull requests every ``seconds`` where no webhook reaches this server (each linked repository's open pull requests are listed; one new or pushed to is synced and fires the pullRequest triggers), or with none stop polling. A rate-limited forge is asked again at its reset, a failing one after a doubling backoff. */
export type ForgeSetPollingArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** Poll the forge for pull requests this often (60 to 86400); absent: stop polling */
  seconds?: number | null;
};
export type ForgeSetPollingResult = PollingView;

/** Store the secret the forge signs this workspace's webhook deliveries with (write-only), or with none remove it (deliveries are refused from then on). Answers the URL to give the forge. */
export type ForgeSetWebhookSecretArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** The webhook's secret as set on the forge (16 to 256 characters); absent: removed */
  secret?: string | null;
};
export type ForgeSetWebhookSecretResult = WebhookView;

/** The workspace's forge: how it is connected (never the credentials), the app's installations or the token's login as the forge says now, the linked repos, and the link that creates a GitHub App for Hangar. */
export type ForgeStatusArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** For the setup link before connecting: a GHES address */
  baseUrl?: string | null;
  /** For the setup link: create the app in this organization */
  org?: string | null;
};
export type ForgeStatusResult = ForgeStatus;

/** The guardrail policy of the workspace, or of one space when ``space_id`` is given. */
export type GuardrailsGetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId?: string | null;
};
export type GuardrailsGetResult = GuardrailPolicy;

/** Set read-only mode and the ask-first action classes for the workspace or one space. */
export type GuardrailsSetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId?: string | null;
  readOnly?: boolean;
  askFirst?: Array<string>;
};
export type GuardrailsSetResult = GuardrailPolicy;

/** Make an action item a ticket (once: an item that has its ticket answers it). */
export type MeetingsActionItemsTicketArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  meetingId: string;
  actionItemId: string;
};
export type MeetingsActionItemsTicketResult = ActionItemTicket;

/** Record a meeting: its title, when it started, who took part (names). */
export type MeetingsCreateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  title: string;
  /** When it started (ISO 8601); now if absent */
  startedAt?: string | null;
  participants?: Array<string>;
};
export type MeetingsCreateResult = MeetingView;

/** Delete a meeting, its transcript, audio, notes, action items and decisions (tickets made stay). */
export type MeetingsDeleteArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  meetingId: string;
};
export type MeetingsDeleteResult = MeetingDeleted;

/** A meeting with its transcript, retained channels, notes (newest first), action items and decisions. */
export type MeetingsGetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  meetingId: string;
};
export type MeetingsGetResult = MeetingDetail;

/** Replace the meeting's transcript with one in WebVTT or JSON segments. Overlapping or out-of-order segments are refused, naming the segment, and the stored transcript stays as it was. */
export type MeetingsImportTranscriptArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  meetingId: string;
  /** webvtt, or json (segments start/end/speaker/text) */
  format: string;
  content: string;
};
export type MeetingsImportTranscriptResult = TranscriptImported;

/** The workspace's meetings, the latest first. */
export type MeetingsListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  limit?: number;
};
export type MeetingsListResult = MeetingList;

/** The built-in "meeting notes" template for this agent: diarise the meeting's audio, name speakers from voice profiles, save the transcript by speaker, have the agent write the notes, save the notes, action items and decisions, and mix the playback track. Save it with pipelines.templates.create and start it with pipelines.runs.start and payload {meeting_id}. */
export type MeetingsNotesTemplateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  /** The agent that writes the notes (its id) */
  agentId: string;
  /** The id to save the template under */
  templateId?: string;
};
export type MeetingsNotesTemplateResult = NotesTemplate;

/** Keep a member's voice profile (an embedding vector) for recognising them in meetings: only with their consent (``consented`` must be true). Yours, or (admins) another member's. */
export type MeetingsProfilesCreateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  label: string;
  embedding: Array<number>;
  /** The member consented to their voice being kept: required, true */
  consented: boolean;
  /** The member whose voice it is (admins only); you if absent */
  userId?: string | null;
};
export type MeetingsProfilesCreateResult = ProfileView;

/** Delete a voice profile: your own, or (admins) anyone's. */
export type MeetingsProfilesDeleteArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  profileId: string;
};
export type MeetingsProfilesDeleteResult = ProfileDeleted;

/** Keep the voiceprint the server holds of a diarised speaker (``Person 2`` of the meeting's latest diarisation) as a member's voice profile, so later meetings name them: only with their consent (``consented`` must be true). Yours, or (admins) another member's. The voiceprint never leaves the server. */
export type MeetingsProfilesFromSpeakerArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  meetingId: string;
  /** The diarised speaker (Person 2) of the meeting's latest diarisation */
  speaker: string;
  /** The member consented to their voice being kept: required, true */
  consented: boolean;
  /** The member whose voice it is (admins only); you if absent */
  userId?: string | null;
  /** The name the profile gives its speaker; the member's name */
  label?: string | null;
  /** Another of the meeting's diarisations than the latest */
  diarizationId?: string | null;
};
export type MeetingsProfilesFromSpeakerResult = ProfileView;

/** The workspace's voice profiles (their embeddings are not sent), or one member's. A profile of someone who is no longer a member is deleted rather than listed. */
export type MeetingsProfilesListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  userId?: string | null;
};
export type MeetingsProfilesListResult = ProfileList;

/** Rename speakers in the transcript (``{"Person 1": "Ada"}``), all at once. */
export type MeetingsRelabelSpeakersArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  meetingId: string;
  /** Old speaker label to new label */
  names: Record<string, string>;
};
export type MeetingsRelabelSpeakersResult = SpeakersRelabelled;

/** Mint a single-use invite code (7 days) that joins a new person at ``role``; redeem at POST /auth/pair. */
export type MembersInviteArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  role?: string;
};
export type MembersInviteResult = OneTimeCode;

/** The workspace's members with their roles. */
export type MembersListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
};
export type MembersListResult = Array<MemberView>;

/** Remove a member. Anyone may leave; removing someone else needs admin (and owner to remove an owner). */
export type MembersRemoveArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  userId: string;
};
export type MembersRemoveResult = UserRef;

/** Change a member's role. Only owners grant or take away ownership; the last owner stays. */
export type MembersSetRoleArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  userId: string;
  role: string;
};
export type MembersSetRoleResult = MemberRoleSet;

/** A space's messages after ``afterSeq``, oldest first; or, with ``last``, its last messages (those before ``beforeSeq`` when given, to page back through a long history), oldest first. */
export type MessagesListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId: string;
  afterSeq?: number;
  limit?: number;
  last?: number | null;
  beforeSeq?: number | null;
};
export type MessagesListResult = MessageList;

/** Post a message to a space as the caller. */
export type MessagesPostArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId: string;
  content: string;
  metadata?: Record<string, unknown>;
};
export type MessagesPostResult = MessageView;

/** Drive a phone rig (an emulator or a device over adb) with one action (tap, swipe, keys, apps, shell argv...). What the device hands back comes fenced as untrusted data. */
export type MobileUseArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
  action?: unknown;
};
export type MobileUseResult = Record<string, unknown>;

/** Approve nodes of the DAG (``nodeKeys``) or every node (``all``); the first approval starts the work. For people only: an agent (its credential, or its in-process tools) never approves a plan, its own or another's. */
export type OrchestrationApproveArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  orchestrationId: string;
  nodeKeys?: Array<string> | null;
  all?: boolean;
};
export type OrchestrationApproveResult = OrchestrationView;

/** Replace the work DAG before work starts (``nodes``: ``{key, title, description?, dependsOn?, agentId?}``): nodes added get a sub-ticket, nodes removed lose theirs; a cycle is refused, naming it. For people only: an agent (its credential, or its in-process tools) is refused. */
export type OrchestrationEditDagArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  orchestrationId: string;
  nodes: Array<Record<string, unknown>>;
};
export type OrchestrationEditDagResult = OrchestrationView;

/** An orchestration, by its id or its ticket's, with each node's state and output from the work run. */
export type OrchestrationGetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  orchestrationId?: string | null;
  ticketId?: string | null;
};
export type OrchestrationGetResult = OrchestrationView;

/** Orchestrate a ticket: the planner agent (default ``agentId``) proposes a DAG of sub-tickets; ``agentId`` works each sub-ticket (unless its node names another agent); the synthesis agent (default the planner) writes the deliverable. ``repoIds``: repos each sub-ticket's space checks out in a worktree of its own. */
export type OrchestrationStartArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  ticketId: string;
  agentId: string;
  plannerAgentId?: string | null;
  synthesisAgentId?: string | null;
  repoIds?: Array<string>;
};
export type OrchestrationStartResult = OrchestrationView;

/** Registered bodies: key, one-line summary and the settings each reads. */
export type PipelinesBodiesListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
};
export type PipelinesBodiesListResult = BodyList;

/** Record a domain event of your own namespace (``review.approved``; the server's own types are refused): it resumes the steps suspended on it and fires its event triggers. */
export type PipelinesEmitArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  eventType: string;
  payload?: Record<string, unknown>;
};
export type PipelinesEmitResult = Emitted;

/** Cancel an unfinished run, whichever process drives it: running bodies are stopped, suspended steps cancelled; returns the run once it has ended. */
export type PipelinesRunsCancelArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  runId: string;
};
export type PipelinesRunsCancelResult = RunSnapshot;

/** A run with its step runs: status, attempts, errors, timings, suspension and progress. */
export type PipelinesRunsGetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  runId: string;
};
export type PipelinesRunsGetResult = RunDetail;

/** Runs, newest first, optionally of one template, in one status, or children of one run. */
export type PipelinesRunsListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  templateId?: string | null;
  status?: PipelinesRunsListRunStatus | null;
  parentRunId?: string | null;
  limit?: number;
};
export type PipelinesRunsListResult = RunList;

/** Start a run of a stored template (manual trigger) with a payload; ``dryRun`` makes bodies report only. */
export type PipelinesRunsStartArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  templateId: string;
  payload?: Record<string, unknown>;
  dryRun?: boolean;
};
export type PipelinesRunsStartResult = RunStarted;

/** Wait until a run settles (completed, failed, cancelled, or suspended waiting on a person or an event) and answer with it; after ``timeoutSeconds`` answer with the run as it stands (still running). Callers that asked for progress hear how far it got at every step change. */
export type PipelinesRunsWaitArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  runId: string;
  /** how long to wait before answering with the run as it stands */
  timeoutSeconds?: number;
};
export type PipelinesRunsWaitResult = RunDetail;

/** Follow step-run changes as they are stored: of one run (replying with the run), or of every run in the workspace (replying with the run list); each event frame is ``{runId, status, steps: [...]}``. */
export type PipelinesRunsWatchArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  runId?: string | null;
};
export type PipelinesRunsWatchResult = RunDetail | RunList;
/** What `pipelines.runs.watch` sends after its reply. */
export type PipelinesRunsWatchEvent = StepsChanged;

/** Store a new template (refused with every problem named when it is invalid, a record it names that the workspace does not hold among them). */
export type PipelinesTemplatesCreateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  template: Record<string, unknown>;
};
export type PipelinesTemplatesCreateResult = TemplateSaved;

/** Delete a template and its triggers (its runs stay, with their own copy of the template). */
export type PipelinesTemplatesDeleteArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  templateId: string;
};
export type PipelinesTemplatesDeleteResult = Deleted;

/** One template, with the warnings it loads with today (e.g. a body no longer registered). */
export type PipelinesTemplatesGetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  templateId: string;
};
export type PipelinesTemplatesGetResult = TemplateDetail;

/** The workspace's templates. */
export type PipelinesTemplatesListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
};
export type PipelinesTemplatesListResult = TemplateList;

/** Replace a template (checked as ``create`` checks it); runs already started keep the version they started with. */
export type PipelinesTemplatesUpdateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  templateId: string;
  template: Record<string, unknown>;
};
export type PipelinesTemplatesUpdateResult = TemplateSaved;

/** Check a template without storing it: its problems (the records it names among them: an agent, team, space, repo or template this workspace does not hold, or the caller cannot see) and warnings. */
export type PipelinesTemplatesValidateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  template: Record<string, unknown>;
};
export type PipelinesTemplatesValidateResult = TemplateCheck;

/** Add a trigger to a template: ``event`` (eventType), ``schedule`` (cron, UTC) or ``pullRequest`` (a pull request of a linked forge repo opened or pushed to; the run's payload has repo_id, repo_full_name, pr_number and head_sha). */
export type PipelinesTriggersCreateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  templateId: string;
  kind: "manual" | "event" | "schedule" | "pullRequest";
  eventType?: string | null;
  cron?: string | null;
  payload?: Record<string, unknown>;
};
export type PipelinesTriggersCreateResult = TriggerView;

/** Remove a trigger (runs it started stay). */
export type PipelinesTriggersDeleteArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  triggerId: string;
};
export type PipelinesTriggersDeleteResult = Deleted;

/** Trigger rows, optionally of one template. */
export type PipelinesTriggersListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  templateId?: string | null;
};
export type PipelinesTriggersListResult = TriggerList;

/** Pause or resume a trigger: a disabled event or schedule trigger starts no runs. */
export type PipelinesTriggersSetEnabledArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  triggerId: string;
  enabled: boolean;
};
export type PipelinesTriggersSetEnabledResult = TriggerView;

/** One repo (by id or name). */
export type ReposGetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  repoId: string;
};
export type ReposGetResult = RepoView;

/** List the workspace's repos. */
export type ReposListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
};
export type ReposListResult = RepoList;

/** Register a workspace repo from a local git repository (``path``) or a clone URL (``url``). The clone runs as the server: a workspace admin's may not use its SSH identity (ssh URLs only to hosts ``trustedRepoHosts`` names), reach its loopback, own, link-local or private addresses, or read its disk (only under ``localRepoRoots``); the server owner's may. */
export type ReposRegisterArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  path?: string | null;
  url?: string | null;
  name?: string | null;
};
export type ReposRegisterResult = RepoView;

/** Forget a repo and delete its clone; refused while worktrees of it exist. */
export type ReposRemoveArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  repoId: string;
};
export type ReposRemoveResult = RepoRemoved;

/** A rig's action log, oldest first: principal, per-rig sequence, verb, outcome, details (never content). */
export type RigActionLogArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
};
export type RigActionLogResult = Array<ActionLogEntry>;

/** Allow your own clipboard crossing in one direction, for up to ten minutes or always (copying out of a rig asks until you do). */
export type RigClipboardGrantArgs = {
  direction: "hostToRig" | "rigToHost";
  minutes?: number | null;
  always?: boolean;
};
export type RigClipboardGrantResult = ClipboardPolicy;

/** Your active clipboard grants; with ``everyone`` (the server owner only) every person's. */
export type RigClipboardGrantsArgs = {
  everyone?: boolean;
};
export type RigClipboardGrantsResult = ClipboardPolicy;

/** Revoke your grants in one direction (the server owner may revoke anyone's, naming ``userId``). */
export type RigClipboardRevokeArgs = {
  direction: "hostToRig" | "rigToHost";
  userId?: string | null;
};
export type RigClipboardRevokeResult = ClipboardPolicy;

/** A space's dev domains (name -> rig and guest port) and whether this host has an HTTPS lane for them. */
export type RigDevDomainsArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId: string;
};
export type RigDevDomainsResult = DevDomainList;

/** Run a shell command in a terminal rig or a full VM (bash -lc, as the rig user, in its home; in a VM through its guest agent). */
export type RigExecArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
  command: string;
  timeoutMs?: number;
};
export type RigExecResult = ExecOutput;

/** A signed URL for the rig's file lane (POST drops files in, GET ?p= reads a file) and its clipboard lane (/rig/clipboard/<rigId> with the same sig), for you only. */
export type RigFileLaneUrlArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
};
export type RigFileLaneUrlResult = LaneUrl;

/** One rig as ``rig_list`` shows it, closed or not. A read: it neither wakes the rig nor counts as activity against its idle timeout. */
export type RigGetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
};
export type RigGetResult = RigRow;

/** Add host names (exact or *.suffix) to one rig's egress allowlist. */
export type RigGrantHostsArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
  hosts: Array<string>;
};
export type RigGrantHostsResult = HostsGranted;

/** A signed WebSocket URL for the live view of a browser or computer rig (frames out; your input while you hold control), for you only. */
export type RigLiveViewUrlArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
};
export type RigLiveViewUrlResult = LaneUrl;

/** Move a browser rig's page as the person holding control: ``{"action": "navigate", "url"}``, ``{"action": "history", "direction": "back"|"forward"}``, ``{"action": "reload"}``, ``{"action": "stop_loading"}`` or ``{"action": "switch_page", "page"}`` (an id the page list gave). Answers the session's pages afterwards. */
export type RigNavigateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
  action?: unknown;
};
export type RigNavigateResult = BrowserPages;

/** Open a rig for a space (one terminal per conversation, reused); answers once booted or still booting. A computer rig runs on the ``enclosure`` backend (Xvfb and a window manager in the namespace sandbox) unless ``backend`` asks for a full VM (``fullvm-kvm``, refused where KVM is unusable, or ``fullvm-tcg``) booted from an imported image (``imageId``). */
export type RigOpenArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId: string;
  surface: string;
  engine?: string | null;
  /** computer rigs: enclosure (the default), fullvm-kvm or fullvm-tcg (a full VM, only when asked) */
  backend?: string | null;
  /** a full VM's imported image (rigs.images); without it the newest imported for the backend */
  imageId?: string | null;
};
export type RigOpenResult = RigOpened;

/** The rig's listening guest ports: forwarded ones with their host (and LAN) ports, then the rest. */
export type RigPortsArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
};
export type RigPortsResult = RigPorts;

/** Hand control back (the holder, or a workspace admin for a stuck take-over). */
export type RigReleaseControlArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
};
export type RigReleaseControlResult = ControlState;

/** Remove a dev domain of the space: its name stops resolving and routing in the space's rigs. */
export type RigRemoveDevDomainArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId: string;
  domain: string;
};
export type RigRemoveDevDomainResult = DevDomainList;

/** Map a dev domain (name.test or name.localhost) to a guest port of a rig of the same space; the space's browser rigs reach it over HTTP and HTTPS. Re-pointing a domain of the space is allowed; a domain another space holds is a conflict. */
export type RigSetDevDomainArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId: string;
  domain: string;
  rigId: string;
  guestPort: number;
};
export type RigSetDevDomainResult = DevDomainList;

/** Share a forwarded port on the local network (an OS-assigned port on all interfaces), or stop sharing. */
export type RigSharePortArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
  guestPort: number;
  share?: boolean;
};
export type RigSharePortResult = RigPorts;

/** A person takes control: others' mutating verbs are refused until it is handed back. */
export type RigTakeControlArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
};
export type RigTakeControlResult = ControlState;

/** A signed WebSocket URL for a live terminal in the rig (PTY over the socket), for you only. */
export type RigTerminalUrlArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
};
export type RigTerminalUrlResult = LaneUrl;

/** Watch a rig live: first its state, then its activity (phases, commands and their results, control, ports) until it ends. An open watch pins the rig against parking and idle reaping. */
export type RigWatchArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
};
export type RigWatchResult = RigSnapshot;
/** What `rig.watch` sends after its reply. */
export type RigWatchEvent = PhaseNotice | ProgressNotice | ExecNotice | ExecResultNotice | ControlNotice | PortsNotice | EgressNotice | EgressGrantedNotice;

/** Destroy a rig and discard its disk; its row stays for the audit trail. */
export type RigCloseArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
};
export type RigCloseResult = RigClosed;

/** The workspace's rigs with surface, status, display and controller (closed ones on request); for a credential limited to one space, that space's rigs. */
export type RigListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  includeClosed?: boolean;
};
export type RigListResult = Array<RigRow>;

/** Start building an image pack in the background (it takes minutes); ``rigs.packs`` shows its progress. */
export type RigsBuildPackArgs = {
  name: string;
};
export type RigsBuildPackResult = Array<PackView>;

/** Check every ready pack against its archive now, whatever the schedule, and build the stale ones again in the background (the old one serves until the new one is ready); ``rigs.watchPacks`` shows how it goes. Another server sharing the packs may be checking them at this moment: then this asks nothing more. */
export type RigsCheckPacksArgs = Record<string, never>;
export type RigsCheckPacksResult = PackList;

/** The desktop images imported for full-VM rigs, newest first. */
export type RigsImagesArgs = Record<string, never>;
export type RigsImagesResult = Array<ImageView>;

/** Import a qcow2 desktop image: copied or downloaded, its SHA-256 checked, its header read (qcow2, no backing or data file, a virtual size within bounds), booted until its guest agent answers; then stored under ``rigs/images/`` and offered. Each refusal says which check failed; nothing is kept from a refused image. */
export type RigsImportImageArgs = {
  /** an absolute path on the server's host or an http(s) URL */
  source: string;
  /** the image's SHA-256, 64 hexadecimal digits */
  sha256: string;
  name: string;
  /** the accelerator the boot check runs under (fullvm-tcg only when asked) */
  backend?: "fullvm-kvm" | "fullvm-tcg";
  bootDeadlineS?: number;
};
export type RigsImportImageResult = ImageView;

/** The image packs rigs boot from on this host: ready, missing, failed, or building with its current step. */
export type RigsPacksArgs = Record<string, never>;
export type RigsPacksResult = Array<PackView>;

/** Set the resident-memory budget of all rigs on this host (MB); idle rigs over it are evicted now. */
export type RigsSetMemoryBudgetArgs = {
  memoryBudgetMb: number;
};
export type RigsSetMemoryBudgetResult = HostStatus;

/** Set the hours between checks of the image packs against their archives (0: never); binds at the next pass of the schedule, in every server sharing the data directory. */
export type RigsSetPackRefreshArgs = {
  hours: number;
};
export type RigsSetPackRefreshResult = PackList;

/** This host's rigs: backend and whether it can run here, the memory budget and what is resident now. */
export type RigsStatusArgs = Record<string, never>;
export type RigsStatusResult = HostStatus;

/** The image packs, then the whole list again at every change: a build starting (asked for here, or by the first rig, shell step or command agent that needs its pack, or by another process sharing the packs), each of its steps, its end (ready, or failed with the reason). */
export type RigsWatchPacksArgs = Record<string, never>;
export type RigsWatchPacksResult = PackList;
/** What `rigs.watchPacks` sends after its reply. */
export type RigsWatchPacksEvent = PackList;

/** The persisted turn events of one run, in order. */
export type RunsEventsArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  runId: string;
};
export type RunsEventsResult = RunEvents;

/** One run: status, outcome, error, turns and the harvested output. */
export type RunsGetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  runId: string;
};
export type RunsGetResult = RunView;

/** Stop a running run (outcome ``interrupted``), whichever process drives it, and return it once it is over; a finished run is returned unchanged. */
export type RunsInterruptArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  runId: string;
};
export type RunsInterruptResult = RunView;

/** Runs, newest first, optionally of one space, agent or status (``running``, ``finished``); for a credential limited to one space, of that space. */
export type RunsListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId?: string | null;
  agentId?: string | null;
  status?: string | null;
  limit?: number;
};
export type RunsListResult = RunsListRunList;

/** Deactivate a user and revoke all their credentials (server owner only). */
export type ServerDeactivateUserArgs = {
  userId: string;
};
export type ServerDeactivateUserResult = UserRef;

/** The server's version, canonical origin and whether manual pairing is allowed. */
export type ServerInfoArgs = Record<string, never>;
export type ServerInfoResult = ServerInfo;

/** How long events and audit rows are kept (the ``retention.*`` server settings) and what the last retention pass deleted in each database (server owner only). */
export type ServerRetentionArgs = Record<string, never>;
export type ServerRetentionResult = RetentionView;

/** Choose who may create workspaces (server owner only). */
export type ServerSetWorkspaceCreatorsArgs = {
  /** serverOwner, members (of any workspace; the default) or anyone */
  who: "serverOwner" | "members" | "anyone";
};
export type ServerSetWorkspaceCreatorsResult = WorkspaceCreators;

/** The data directory's size: per workspace its database and its files (repositories, spaces, worktrees, pipeline run folders), and the server's own (server owner only). Walked without following symlinks, within a time bound. */
export type ServerStorageArgs = Record<string, never>;
export type ServerStorageResult = StorageView;

/** Every user of the server (server owner only). */
export type ServerUsersArgs = Record<string, never>;
export type ServerUsersResult = Array<ServerUser>;

/** Who may create workspaces now (server owner only). */
export type ServerWorkspaceCreatorsArgs = Record<string, never>;
export type ServerWorkspaceCreatorsResult = WorkspaceCreators;

/** The workspace's settings: every declared key with its summary and stored value (null when default). */
export type SettingsGetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
};
export type SettingsGetResult = { [key: string]: SettingView };

/** Set one workspace setting (validated by the part that declares it); a null value restores the default. */
export type SettingsSetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  key: string;
  value?: unknown;
};
export type SettingsSetResult = SettingSaved;

/** Drive a platform simulator rig with one action (tap, swipe, keys, apps, spawn argv...); they run only on a macOS server, so elsewhere a well-formed action answers ``unavailable`` saying so. */
export type SimUseArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  rigId: string;
  action?: unknown;
};
export type SimUseResult = Record<string, unknown>;

/** A skill with every finding of its last scan (kind, severity, message, file and line). */
export type SkillsFindingsArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  skillId: string;
};
export type SkillsFindingsResult = SkillFindings;

/** Install the skill ``name`` an agent-skills discovery index (0.2.0) at ``indexUrl`` lists: its bytes are fetched and must hash to the digest the index gives (a mismatch is refused, naming both), then scanned. */
export type SkillsInstallArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  indexUrl: string;
  name: string;
};
export type SkillsInstallResult = SkillView;

/** The workspace's installed skills with their verdicts (``loaded``: whether agents load it now). */
export type SkillsListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
};
export type SkillsListResult = SkillList;

/** Let a skill under ``review`` load, having read its findings (``reason`` says why; an audit row records it). It holds for the findings recorded now: a later scan that finds otherwise needs a new override. A ``blocked`` skill is refused: it is never loaded. */
export type SkillsOverrideArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  skillId: string;
  reason: string;
};
export type SkillsOverrideResult = SkillView;

/** Remove an installed skill: no agent run started after this loads it. */
export type SkillsRemoveArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  skillId: string;
};
export type SkillsRemoveResult = SkillView;

/** Scan one installed skill again now (the index read again for drift) and record its verdict. */
export type SkillsScanArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  skillId: string;
};
export type SkillsScanResult = SkillView;

/** Install a skill from its bytes (``contentBase64``, at most 160 KiB; ``kind`` ``skill-md`` or ``archive``), pinned by ``digest`` (``sha256:<hex>`` of the exact bytes, refused when they differ), then scanned. */
export type SkillsUploadArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  name: string;
  kind: string;
  contentBase64: string;
  digest: string;
  description?: string;
};
export type SkillsUploadResult = SkillView;

/** Archive a space: it keeps its history but takes no new messages or agent runs. */
export type SpacesArchiveArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId: string;
};
export type SpacesArchiveResult = SpaceView;

/** Open a space (a conversation), optionally with repo worktrees checked out in its working folder. */
export type SpacesCreateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  title: string;
  mode?: string;
  hidden?: boolean;
  repoIds?: Array<string>;
  allRepos?: boolean;
};
export type SpacesCreateResult = SpaceDetail;

/** One space with its working folder and checked-out repos. */
export type SpacesGetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId: string;
};
export type SpacesGetResult = SpaceDetail;

/** List the workspace's spaces (archived and hidden ones on request); for a credential limited to one space, that space. */
export type SpacesListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  includeArchived?: boolean;
  includeHidden?: boolean;
};
export type SpacesListResult = SpaceList;

/** Rename a space. */
export type SpacesRenameArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId: string;
  title: string;
};
export type SpacesRenameResult = SpaceView;

/** Follow a space: new messages, provisioning changes and agent turn events, as event frames. */
export type SpacesWatchArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId: string;
  afterSeq?: number | null;
};
export type SpacesWatchResult = SpaceFollowed;
/** What `spaces.watch` sends after its reply. */
export type SpacesWatchEvent = SpaceEventFrame;

/** What an identity provider's administrator registers: the values the sign-ins use (``hangar.sso.endpoints``). */
export type SsoEndpointsArgs = Record<string, never>;
export type SsoEndpointsResult = SsoEndpoints;

/** The saved connection of one kind, every field with its value; the client secret only as a flag. */
export type SsoGetConfigArgs = {
  kind: "saml" | "oidc";
};
export type SsoGetConfigResult = SamlConnection | OidcView;

/** Validate, persist and apply a connection at once; fields left out keep their saved values. */
export type SsoSaveConfigArgs = {
  kind: "saml" | "oidc";
  config: Record<string, unknown>;
};
export type SsoSaveConfigResult = SamlConnection | OidcView;

/** A new SCIM bearer token, returned this once; the previous token stops working. */
export type SsoScimRegenerateTokenArgs = Record<string, never>;
export type SsoScimRegenerateTokenResult = ScimToken;

/** The device-credential maximum age and idle timeout, in minutes (0 means unset). */
export type SsoSessionPolicyArgs = Record<string, never>;
export type SsoSessionPolicyResult = SessionPolicyView;

/** Allow or forbid manual pairing; forbidding is refused while no SSO connection works (lockout guard). */
export type SsoSetPairingEnabledArgs = {
  enabled: boolean;
};
export type SsoSetPairingEnabledResult = PairingState;

/** Set the bounds; every later use of a device credential is checked against them. */
export type SsoSetSessionPolicyArgs = {
  maxAgeMinutes: number;
  idleTimeoutMinutes: number;
};
export type SsoSetSessionPolicyResult = SessionPolicyView;

/** Our SAML service-provider entity descriptor for an origin (what the IdP's administrator imports). */
export type SsoSpMetadataArgs = {
  origin: string;
};
export type SsoSpMetadataResult = SpMetadata;

/** Enabled and configured flags per kind, SCIM token presence, the canonical origin, pairing. */
export type SsoStatusArgs = Record<string, never>;
export type SsoStatusResult = SsoStatus;

/** Test the saved connection, or the saved one with the given unsaved values, without saving anything. */
export type SsoTestConnectionArgs = {
  kind: "saml" | "oidc";
  config?: Record<string, unknown> | null;
};
export type SsoTestConnectionResult = SamlConnectionOk | OidcConnectionOk | ConnectionFailed;

/** Create a team of agents with a leader and a default dispatch mode. */
export type TeamsCreateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  name: string;
  memberIds: Array<string>;
  leaderId?: string | null;
  dispatchMode?: string;
};
export type TeamsCreateResult = TeamView;

/** Delete a team (its agents stay). */
export type TeamsDeleteArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  teamId: string;
};
export type TeamsDeleteResult = TeamDeleted;

/** Dispatch a team into a space: every member (``allParallel``) or only the leader (``manager``). */
export type TeamsDispatchArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  teamId: string;
  spaceId: string;
  prompt: string;
  dispatchMode?: string | null;
  outputSchema?: Record<string, unknown> | null;
};
export type TeamsDispatchResult = TeamDispatch;

/** One team. */
export type TeamsGetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  teamId: string;
};
export type TeamsGetResult = TeamView;

/** List the workspace's teams. */
export type TeamsListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
};
export type TeamsListResult = TeamList;

/** Rename a team, change its members, leader or dispatch mode. */
export type TeamsUpdateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  teamId: string;
  name?: string | null;
  memberIds?: Array<string> | null;
  leaderId?: string | null;
  dispatchMode?: string | null;
};
export type TeamsUpdateResult = TeamView;

/** File a ticket (a sub-ticket with ``parentId``), reported by the caller. */
export type TicketsCreateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  title: string;
  description?: string;
  parentId?: string | null;
  status?: string;
  spaceId?: string | null;
};
export type TicketsCreateResult = TicketView;

/** Delete a ticket and its sub-tickets. */
export type TicketsDeleteArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  ticketId: string;
};
export type TicketsDeleteResult = TicketsDeleted;

/** One ticket with its direct sub-tickets. */
export type TicketsGetArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  ticketId: string;
};
export type TicketsGetResult = TicketDetail;

/** List tickets, optionally the sub-tickets of one parent, only top-level ones, or one status. */
export type TicketsListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  parentId?: string | null;
  rootsOnly?: boolean;
  status?: string | null;
};
export type TicketsListResult = TicketList;

/** Edit a ticket: title, description, status, or its parent (``detach`` makes it top-level). */
export type TicketsUpdateArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  ticketId: string;
  title?: string | null;
  description?: string | null;
  status?: string | null;
  parentId?: string | null;
  detach?: boolean;
};
export type TicketsUpdateResult = TicketView;

/** The calling user, whether they are the server owner, and their workspaces with roles. */
export type UsersMeArgs = Record<string, never>;
export type UsersMeResult = Me;

/** Create a workspace; the caller becomes its owner. Who may is a server setting (``server.setWorkspaceCreators``; default: the server owner and members of any workspace, not guests). */
export type WorkspacesCreateArgs = {
  name: string;
};
export type WorkspacesCreateResult = WorkspaceRef;

/** Delete a workspace and everything in it: its rigs, runs and chat connection stop, its credentials and invites are revoked, its databases, files and chat credentials are removed. ``confirm`` must equal the workspace's name. Allowed to the workspace's owners and admins and to the server owner. The server keeps a record of the deletion (``workspaces.deletions``); one interrupted half way finishes at the next start. */
export type WorkspacesDeleteArgs = {
  /** The workspace. */
  workspace_id: string;
  /** The workspace's name, typed again. */
  confirm: string;
};
export type WorkspacesDeleteResult = WorkspaceDeletion;

/** The server's record of deleted workspaces, newest first: who asked, which workspace, when (server owner only). */
export type WorkspacesDeletionsArgs = Record<string, never>;
export type WorkspacesDeletionsResult = Array<WorkspaceDeletion>;

/** A URL (valid for ten minutes, for you only) that downloads this workspace's export: a tar of its records as JSON lines and its files, with a manifest and a README. Allowed to the workspace's owner and admins, and to the server owner; the download checks that again. For people only: an agent exports nothing. */
export type WorkspacesExportArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
};
export type WorkspacesExportResult = ExportLink;

/** The workspaces the caller belongs to, with the caller's role in each. */
export type WorkspacesListArgs = Record<string, never>;
export type WorkspacesListResult = Array<WorkspaceEntry>;

/** Check out ``<repoId>``, ``<repoId>@<branch>`` or ``<repoId>#<number>`` (a pull request) for a space, a ticket, or a PR editor. */
export type WorktreesAddArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId?: string | null;
  ticketId?: string | null;
  repoFullName?: string | null;
  prNumber?: number | null;
  /** <repoId>, <repoId>@<branch> or <repoId>#<pullRequestNumber> */
  repo: string;
};
export type WorktreesAddResult = WorktreeView;

/** Release a ticket's, a PR editor's or a space's worktrees; with no owner, sweep the workspace. */
export type WorktreesCleanupArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId?: string | null;
  ticketId?: string | null;
  repoFullName?: string | null;
  prNumber?: number | null;
  dryRun?: boolean;
};
export type WorktreesCleanupResult = CleanupView;

/** List worktrees, optionally those of one space, ticket or PR. */
export type WorktreesListArgs = {
  /** The workspace the call acts in. */
  workspace_id: string;
  spaceId?: string | null;
  ticketId?: string | null;
  repoFullName?: string | null;
  prNumber?: number | null;
};
export type WorktreesListResult = WorktreeList;

/** Every op: its kind, scope, argument and result types, and a watch's event type. */
export interface Ops {
  "agents.create": { kind: "mutate"; scope: "workspace"; args: AgentsCreateArgs; result: AgentsCreateResult; event: never };
  "agents.delete": { kind: "destructive"; scope: "workspace"; args: AgentsDeleteArgs; result: AgentsDeleteResult; event: never };
  "agents.frontDoor": { kind: "read"; scope: "workspace"; args: AgentsFrontDoorArgs; result: AgentsFrontDoorResult; event: never };
  "agents.get": { kind: "read"; scope: "workspace"; args: AgentsGetArgs; result: AgentsGetResult; event: never };
  "agents.list": { kind: "read"; scope: "workspace"; args: AgentsListArgs; result: AgentsListResult; event: never };
  "agents.run": { kind: "mutate"; scope: "workspace"; args: AgentsRunArgs; result: AgentsRunResult; event: never };
  "agents.runMany": { kind: "mutate"; scope: "workspace"; args: AgentsRunManyArgs; result: AgentsRunManyResult; event: never };
  "agents.update": { kind: "mutate"; scope: "workspace"; args: AgentsUpdateArgs; result: AgentsUpdateResult; event: never };
  "audit.list": { kind: "read"; scope: "workspace"; args: AuditListArgs; result: AuditListResult; event: never };
  "browser_use": { kind: "mutate"; scope: "workspace"; args: BrowserUseArgs; result: BrowserUseResult; event: never };
  "chat.beginUserLink": { kind: "mutate"; scope: "workspace"; args: ChatBeginUserLinkArgs; result: ChatBeginUserLinkResult; event: never };
  "chat.botProfile": { kind: "read"; scope: "workspace"; args: ChatBotProfileArgs; result: ChatBotProfileResult; event: never };
  "chat.connect": { kind: "mutate"; scope: "workspace"; args: ChatConnectArgs; result: ChatConnectResult; event: never };
  "chat.createApp": { kind: "mutate"; scope: "workspace"; args: ChatCreateAppArgs; result: ChatCreateAppResult; event: never };
  "chat.disconnect": { kind: "destructive"; scope: "workspace"; args: ChatDisconnectArgs; result: ChatDisconnectResult; event: never };
  "chat.listUserLinks": { kind: "read"; scope: "workspace"; args: ChatListUserLinksArgs; result: ChatListUserLinksResult; event: never };
  "chat.providers": { kind: "read"; scope: "workspace"; args: ChatProvidersArgs; result: ChatProvidersResult; event: never };
  "chat.setupLink": { kind: "read"; scope: "workspace"; args: ChatSetupLinkArgs; result: ChatSetupLinkResult; event: never };
  "chat.status": { kind: "read"; scope: "workspace"; args: ChatStatusArgs; result: ChatStatusResult; event: never };
  "chat.unlinkUser": { kind: "mutate"; scope: "workspace"; args: ChatUnlinkUserArgs; result: ChatUnlinkUserResult; event: never };
  "chat.updateBotProfile": { kind: "mutate"; scope: "workspace"; args: ChatUpdateBotProfileArgs; result: ChatUpdateBotProfileResult; event: never };
  "chat.watchUserLinks": { kind: "watch"; scope: "workspace"; args: ChatWatchUserLinksArgs; result: ChatWatchUserLinksResult; event: ChatWatchUserLinksEvent };
  "code.callees": { kind: "read"; scope: "workspace"; args: CodeCalleesArgs; result: CodeCalleesResult; event: never };
  "code.callers": { kind: "read"; scope: "workspace"; args: CodeCallersArgs; result: CodeCallersResult; event: never };
  "code.definition": { kind: "read"; scope: "workspace"; args: CodeDefinitionArgs; result: CodeDefinitionResult; event: never };
  "code.outline": { kind: "read"; scope: "workspace"; args: CodeOutlineArgs; result: CodeOutlineResult; event: never };
  "code.references": { kind: "read"; scope: "workspace"; args: CodeReferencesArgs; result: CodeReferencesResult; event: never };
  "code.search": { kind: "read"; scope: "workspace"; args: CodeSearchArgs; result: CodeSearchResult; event: never };
  "code.status": { kind: "read"; scope: "workspace"; args: CodeStatusArgs; result: CodeStatusResult; event: never };
  "computer_use": { kind: "mutate"; scope: "workspace"; args: ComputerUseArgs; result: ComputerUseResult; event: never };
  "devices.list": { kind: "read"; scope: "server"; args: DevicesListArgs; result: DevicesListResult; event: never };
  "devices.pairingCode": { kind: "mutate"; scope: "server"; args: DevicesPairingCodeArgs; result: DevicesPairingCodeResult; event: never };
  "devices.rename": { kind: "mutate"; scope: "server"; args: DevicesRenameArgs; result: DevicesRenameResult; event: never };
  "devices.revoke": { kind: "destructive"; scope: "server"; args: DevicesRevokeArgs; result: DevicesRevokeResult; event: never };
  "events.list": { kind: "read"; scope: "workspace"; args: EventsListArgs; result: EventsListResult; event: never };
  "events.watch": { kind: "watch"; scope: "workspace"; args: EventsWatchArgs; result: EventsWatchResult; event: EventsWatchEvent };
  "forge.connect": { kind: "mutate"; scope: "workspace"; args: ForgeConnectArgs; result: ForgeConnectResult; event: never };
  "forge.disconnect": { kind: "destructive"; scope: "workspace"; args: ForgeDisconnectArgs; result: ForgeDisconnectResult; event: never };
  "forge.linkRepo": { kind: "mutate"; scope: "workspace"; args: ForgeLinkRepoArgs; result: ForgeLinkRepoResult; event: never };
  "forge.openPr": { kind: "mutate"; scope: "workspace"; args: ForgeOpenPrArgs; result: ForgeOpenPrResult; event: never };
  "forge.pr": { kind: "read"; scope: "workspace"; args: ForgePrArgs; result: ForgePrResult; event: never };
  "forge.prs": { kind: "read"; scope: "workspace"; args: ForgePrsArgs; result: ForgePrsResult; event: never };
  "forge.reviewTemplate": { kind: "read"; scope: "workspace"; args: ForgeReviewTemplateArgs; result: ForgeReviewTemplateResult; event: never };
  "forge.setPolling": { kind: "mutate"; scope: "workspace"; args: ForgeSetPollingArgs; result: ForgeSetPollingResult; event: never };
  "forge.setWebhookSecret": { kind: "mutate"; scope: "workspace"; args: ForgeSetWebhookSecretArgs; result: ForgeSetWebhookSecretResult; event: never };
  "forge.status": { kind: "read"; scope: "workspace"; args: ForgeStatusArgs; result: ForgeStatusResult; event: never };
  "guardrails.get": { kind: "read"; scope: "workspace"; args: GuardrailsGetArgs; result: GuardrailsGetResult; event: never };
  "guardrails.set": { kind: "mutate"; scope: "workspace"; args: GuardrailsSetArgs; result: GuardrailsSetResult; event: never };
  "meetings.actionItems.ticket": { kind: "mutate"; scope: "workspace"; args: MeetingsActionItemsTicketArgs; result: MeetingsActionItemsTicketResult; event: never };
  "meetings.create": { kind: "mutate"; scope: "workspace"; args: MeetingsCreateArgs; result: MeetingsCreateResult; event: never };
  "meetings.delete": { kind: "mutate"; scope: "workspace"; args: MeetingsDeleteArgs; result: MeetingsDeleteResult; event: never };
  "meetings.get": { kind: "read"; scope: "workspace"; args: MeetingsGetArgs; result: MeetingsGetResult; event: never };
  "meetings.importTranscript": { kind: "mutate"; scope: "workspace"; args: MeetingsImportTranscriptArgs; result: MeetingsImportTranscriptResult; event: never };
  "meetings.list": { kind: "read"; scope: "workspace"; args: MeetingsListArgs; result: MeetingsListResult; event: never };
  "meetings.notesTemplate": { kind: "read"; scope: "workspace"; args: MeetingsNotesTemplateArgs; result: MeetingsNotesTemplateResult; event: never };
  "meetings.profiles.create": { kind: "mutate"; scope: "workspace"; args: MeetingsProfilesCreateArgs; result: MeetingsProfilesCreateResult; event: never };
  "meetings.profiles.delete": { kind: "mutate"; scope: "workspace"; args: MeetingsProfilesDeleteArgs; result: MeetingsProfilesDeleteResult; event: never };
  "meetings.profiles.fromSpeaker": { kind: "mutate"; scope: "workspace"; args: MeetingsProfilesFromSpeakerArgs; result: MeetingsProfilesFromSpeakerResult; event: never };
  "meetings.profiles.list": { kind: "read"; scope: "workspace"; args: MeetingsProfilesListArgs; result: MeetingsProfilesListResult; event: never };
  "meetings.relabelSpeakers": { kind: "mutate"; scope: "workspace"; args: MeetingsRelabelSpeakersArgs; result: MeetingsRelabelSpeakersResult; event: never };
  "members.invite": { kind: "mutate"; scope: "workspace"; args: MembersInviteArgs; result: MembersInviteResult; event: never };
  "members.list": { kind: "read"; scope: "workspace"; args: MembersListArgs; result: MembersListResult; event: never };
  "members.remove": { kind: "destructive"; scope: "workspace"; args: MembersRemoveArgs; result: MembersRemoveResult; event: never };
  "members.setRole": { kind: "mutate"; scope: "workspace"; args: MembersSetRoleArgs; result: MembersSetRoleResult; event: never };
  "messages.list": { kind: "read"; scope: "workspace"; args: MessagesListArgs; result: MessagesListResult; event: never };
  "messages.post": { kind: "mutate"; scope: "workspace"; args: MessagesPostArgs; result: MessagesPostResult; event: never };
  "mobile_use": { kind: "mutate"; scope: "workspace"; args: MobileUseArgs; result: MobileUseResult; event: never };
  "orchestration.approve": { kind: "mutate"; scope: "workspace"; args: OrchestrationApproveArgs; result: OrchestrationApproveResult; event: never };
  "orchestration.editDag": { kind: "mutate"; scope: "workspace"; args: OrchestrationEditDagArgs; result: OrchestrationEditDagResult; event: never };
  "orchestration.get": { kind: "read"; scope: "workspace"; args: OrchestrationGetArgs; result: OrchestrationGetResult; event: never };
  "orchestration.start": { kind: "mutate"; scope: "workspace"; args: OrchestrationStartArgs; result: OrchestrationStartResult; event: never };
  "pipelines.bodies.list": { kind: "read"; scope: "workspace"; args: PipelinesBodiesListArgs; result: PipelinesBodiesListResult; event: never };
  "pipelines.emit": { kind: "mutate"; scope: "workspace"; args: PipelinesEmitArgs; result: PipelinesEmitResult; event: never };
  "pipelines.runs.cancel": { kind: "mutate"; scope: "workspace"; args: PipelinesRunsCancelArgs; result: PipelinesRunsCancelResult; event: never };
  "pipelines.runs.get": { kind: "read"; scope: "workspace"; args: PipelinesRunsGetArgs; result: PipelinesRunsGetResult; event: never };
  "pipelines.runs.list": { kind: "read"; scope: "workspace"; args: PipelinesRunsListArgs; result: PipelinesRunsListResult; event: never };
  "pipelines.runs.start": { kind: "mutate"; scope: "workspace"; args: PipelinesRunsStartArgs; result: PipelinesRunsStartResult; event: never };
  "pipelines.runs.wait": { kind: "read"; scope: "workspace"; args: PipelinesRunsWaitArgs; result: PipelinesRunsWaitResult; event: never };
  "pipelines.runs.watch": { kind: "watch"; scope: "workspace"; args: PipelinesRunsWatchArgs; result: PipelinesRunsWatchResult; event: PipelinesRunsWatchEvent };
  "pipelines.templates.create": { kind: "mutate"; scope: "workspace"; args: PipelinesTemplatesCreateArgs; result: PipelinesTemplatesCreateResult; event: never };
  "pipelines.templates.delete": { kind: "destructive"; scope: "workspace"; args: PipelinesTemplatesDeleteArgs; result: PipelinesTemplatesDeleteResult; event: never };
  "pipelines.templates.get": { kind: "read"; scope: "workspace"; args: PipelinesTemplatesGetArgs; result: PipelinesTemplatesGetResult; event: never };
  "pipelines.templates.list": { kind: "read"; scope: "workspace"; args: PipelinesTemplatesListArgs; result: PipelinesTemplatesListResult; event: never };
  "pipelines.templates.update": { kind: "mutate"; scope: "workspace"; args: PipelinesTemplatesUpdateArgs; result: PipelinesTemplatesUpdateResult; event: never };
  "pipelines.templates.validate": { kind: "read"; scope: "workspace"; args: PipelinesTemplatesValidateArgs; result: PipelinesTemplatesValidateResult; event: never };
  "pipelines.triggers.create": { kind: "mutate"; scope: "workspace"; args: PipelinesTriggersCreateArgs; result: PipelinesTriggersCreateResult; event: never };
  "pipelines.triggers.delete": { kind: "destructive"; scope: "workspace"; args: PipelinesTriggersDeleteArgs; result: PipelinesTriggersDeleteResult; event: never };
  "pipelines.triggers.list": { kind: "read"; scope: "workspace"; args: PipelinesTriggersListArgs; result: PipelinesTriggersListResult; event: never };
  "pipelines.triggers.setEnabled": { kind: "mutate"; scope: "workspace"; args: PipelinesTriggersSetEnabledArgs; result: PipelinesTriggersSetEnabledResult; event: never };
  "repos.get": { kind: "read"; scope: "workspace"; args: ReposGetArgs; result: ReposGetResult; event: never };
  "repos.list": { kind: "read"; scope: "workspace"; args: ReposListArgs; result: ReposListResult; event: never };
  "repos.register": { kind: "mutate"; scope: "workspace"; args: ReposRegisterArgs; result: ReposRegisterResult; event: never };
  "repos.remove": { kind: "destructive"; scope: "workspace"; args: ReposRemoveArgs; result: ReposRemoveResult; event: never };
  "rig.actionLog": { kind: "read"; scope: "workspace"; args: RigActionLogArgs; result: RigActionLogResult; event: never };
  "rig.clipboardGrant": { kind: "mutate"; scope: "server"; args: RigClipboardGrantArgs; result: RigClipboardGrantResult; event: never };
  "rig.clipboardGrants": { kind: "read"; scope: "server"; args: RigClipboardGrantsArgs; result: RigClipboardGrantsResult; event: never };
  "rig.clipboardRevoke": { kind: "mutate"; scope: "server"; args: RigClipboardRevokeArgs; result: RigClipboardRevokeResult; event: never };
  "rig.devDomains": { kind: "read"; scope: "workspace"; args: RigDevDomainsArgs; result: RigDevDomainsResult; event: never };
  "rig.exec": { kind: "mutate"; scope: "workspace"; args: RigExecArgs; result: RigExecResult; event: never };
  "rig.fileLaneUrl": { kind: "read"; scope: "workspace"; args: RigFileLaneUrlArgs; result: RigFileLaneUrlResult; event: never };
  "rig.get": { kind: "read"; scope: "workspace"; args: RigGetArgs; result: RigGetResult; event: never };
  "rig.grantHosts": { kind: "mutate"; scope: "workspace"; args: RigGrantHostsArgs; result: RigGrantHostsResult; event: never };
  "rig.liveViewUrl": { kind: "read"; scope: "workspace"; args: RigLiveViewUrlArgs; result: RigLiveViewUrlResult; event: never };
  "rig.navigate": { kind: "mutate"; scope: "workspace"; args: RigNavigateArgs; result: RigNavigateResult; event: never };
  "rig.open": { kind: "mutate"; scope: "workspace"; args: RigOpenArgs; result: RigOpenResult; event: never };
  "rig.ports": { kind: "read"; scope: "workspace"; args: RigPortsArgs; result: RigPortsResult; event: never };
  "rig.releaseControl": { kind: "mutate"; scope: "workspace"; args: RigReleaseControlArgs; result: RigReleaseControlResult; event: never };
  "rig.removeDevDomain": { kind: "mutate"; scope: "workspace"; args: RigRemoveDevDomainArgs; result: RigRemoveDevDomainResult; event: never };
  "rig.setDevDomain": { kind: "mutate"; scope: "workspace"; args: RigSetDevDomainArgs; result: RigSetDevDomainResult; event: never };
  "rig.sharePort": { kind: "mutate"; scope: "workspace"; args: RigSharePortArgs; result: RigSharePortResult; event: never };
  "rig.takeControl": { kind: "mutate"; scope: "workspace"; args: RigTakeControlArgs; result: RigTakeControlResult; event: never };
  "rig.terminalUrl": { kind: "mutate"; scope: "workspace"; args: RigTerminalUrlArgs; result: RigTerminalUrlResult; event: never };
  "rig.watch": { kind: "watch"; scope: "workspace"; args: RigWatchArgs; result: RigWatchResult; event: RigWatchEvent };
  "rig_close": { kind: "destructive"; scope: "workspace"; args: RigCloseArgs; result: RigCloseResult; event: never };
  "rig_list": { kind: "read"; scope: "workspace"; args: RigListArgs; result: RigListResult; event: never };
  "rigs.buildPack": { kind: "mutate"; scope: "server"; args: RigsBuildPackArgs; result: RigsBuildPackResult; event: never };
  "rigs.checkPacks": { kind: "mutate"; scope: "server"; args: RigsCheckPacksArgs; result: RigsCheckPacksResult; event: never };
  "rigs.images": { kind: "read"; scope: "server"; args: RigsImagesArgs; result: RigsImagesResult; event: never };
  "rigs.importImage": { kind: "mutate"; scope: "server"; args: RigsImportImageArgs; result: RigsImportImageResult; event: never };
  "rigs.packs": { kind: "read"; scope: "server"; args: RigsPacksArgs; result: RigsPacksResult; event: never };
  "rigs.setMemoryBudget": { kind: "mutate"; scope: "server"; args: RigsSetMemoryBudgetArgs; result: RigsSetMemoryBudgetResult; event: never };
  "rigs.setPackRefresh": { kind: "mutate"; scope: "server"; args: RigsSetPackRefreshArgs; result: RigsSetPackRefreshResult; event: never };
  "rigs.status": { kind: "read"; scope: "server"; args: RigsStatusArgs; result: RigsStatusResult; event: never };
  "rigs.watchPacks": { kind: "watch"; scope: "server"; args: RigsWatchPacksArgs; result: RigsWatchPacksResult; event: RigsWatchPacksEvent };
  "runs.events": { kind: "read"; scope: "workspace"; args: RunsEventsArgs; result: RunsEventsResult; event: never };
  "runs.get": { kind: "read"; scope: "workspace"; args: RunsGetArgs; result: RunsGetResult; event: never };
  "runs.interrupt": { kind: "mutate"; scope: "workspace"; args: RunsInterruptArgs; result: RunsInterruptResult; event: never };
  "runs.list": { kind: "read"; scope: "workspace"; args: RunsListArgs; result: RunsListResult; event: never };
  "server.deactivateUser": { kind: "destructive"; scope: "server"; args: ServerDeactivateUserArgs; result: ServerDeactivateUserResult; event: never };
  "server.info": { kind: "read"; scope: "server"; args: ServerInfoArgs; result: ServerInfoResult; event: never };
  "server.retention": { kind: "read"; scope: "server"; args: ServerRetentionArgs; result: ServerRetentionResult; event: never };
  "server.setWorkspaceCreators": { kind: "mutate"; scope: "server"; args: ServerSetWorkspaceCreatorsArgs; result: ServerSetWorkspaceCreatorsResult; event: never };
  "server.storage": { kind: "read"; scope: "server"; args: ServerStorageArgs; result: ServerStorageResult; event: never };
  "server.users": { kind: "read"; scope: "server"; args: ServerUsersArgs; result: ServerUsersResult; event: never };
  "server.workspaceCreators": { kind: "read"; scope: "server"; args: ServerWorkspaceCreatorsArgs; result: ServerWorkspaceCreatorsResult; event: never };
  "settings.get": { kind: "read"; scope: "workspace"; args: SettingsGetArgs; result: SettingsGetResult; event: never };
  "settings.set": { kind: "mutate"; scope: "workspace"; args: SettingsSetArgs; result: SettingsSetResult; event: never };
  "sim_use": { kind: "mutate"; scope: "workspace"; args: SimUseArgs; result: SimUseResult; event: never };
  "skills.findings": { kind: "read"; scope: "workspace"; args: SkillsFindingsArgs; result: SkillsFindingsResult; event: never };
  "skills.install": { kind: "mutate"; scope: "workspace"; args: SkillsInstallArgs; result: SkillsInstallResult; event: never };
  "skills.list": { kind: "read"; scope: "workspace"; args: SkillsListArgs; result: SkillsListResult; event: never };
  "skills.override": { kind: "mutate"; scope: "workspace"; args: SkillsOverrideArgs; result: SkillsOverrideResult; event: never };
  "skills.remove": { kind: "destructive"; scope: "workspace"; args: SkillsRemoveArgs; result: SkillsRemoveResult; event: never };
  "skills.scan": { kind: "mutate"; scope: "workspace"; args: SkillsScanArgs; result: SkillsScanResult; event: never };
  "skills.upload": { kind: "mutate"; scope: "workspace"; args: SkillsUploadArgs; result: SkillsUploadResult; event: never };
  "spaces.archive": { kind: "mutate"; scope: "workspace"; args: SpacesArchiveArgs; result: SpacesArchiveResult; event: never };
  "spaces.create": { kind: "mutate"; scope: "workspace"; args: SpacesCreateArgs; result: SpacesCreateResult; event: never };
  "spaces.get": { kind: "read"; scope: "workspace"; args: SpacesGetArgs; result: SpacesGetResult; event: never };
  "spaces.list": { kind: "read"; scope: "workspace"; args: SpacesListArgs; result: SpacesListResult; event: never };
  "spaces.rename": { kind: "mutate"; scope: "workspace"; args: SpacesRenameArgs; result: SpacesRenameResult; event: never };
  "spaces.watch": { kind: "watch"; scope: "workspace"; args: SpacesWatchArgs; result: SpacesWatchResult; event: SpacesWatchEvent };
  "sso.endpoints": { kind: "read"; scope: "server"; args: SsoEndpointsArgs; result: SsoEndpointsResult; event: never };
  "sso.getConfig": { kind: "read"; scope: "server"; args: SsoGetConfigArgs; result: SsoGetConfigResult; event: never };
  "sso.saveConfig": { kind: "mutate"; scope: "server"; args: SsoSaveConfigArgs; result: SsoSaveConfigResult; event: never };
  "sso.scimRegenerateToken": { kind: "mutate"; scope: "server"; args: SsoScimRegenerateTokenArgs; result: SsoScimRegenerateTokenResult; event: never };
  "sso.sessionPolicy": { kind: "read"; scope: "server"; args: SsoSessionPolicyArgs; result: SsoSessionPolicyResult; event: never };
  "sso.setPairingEnabled": { kind: "mutate"; scope: "server"; args: SsoSetPairingEnabledArgs; result: SsoSetPairingEnabledResult; event: never };
  "sso.setSessionPolicy": { kind: "mutate"; scope: "server"; args: SsoSetSessionPolicyArgs; result: SsoSetSessionPolicyResult; event: never };
  "sso.spMetadata": { kind: "read"; scope: "server"; args: SsoSpMetadataArgs; result: SsoSpMetadataResult; event: never };
  "sso.status": { kind: "read"; scope: "server"; args: SsoStatusArgs; result: SsoStatusResult; event: never };
  "sso.testConnection": { kind: "read"; scope: "server"; args: SsoTestConnectionArgs; result: SsoTestConnectionResult; event: never };
  "teams.create": { kind: "mutate"; scope: "workspace"; args: TeamsCreateArgs; result: TeamsCreateResult; event: never };
  "teams.delete": { kind: "destructive"; scope: "workspace"; args: TeamsDeleteArgs; result: TeamsDeleteResult; event: never };
  "teams.dispatch": { kind: "mutate"; scope: "workspace"; args: TeamsDispatchArgs; result: TeamsDispatchResult; event: never };
  "teams.get": { kind: "read"; scope: "workspace"; args: TeamsGetArgs; result: TeamsGetResult; event: never };
  "teams.list": { kind: "read"; scope: "workspace"; args: TeamsListArgs; result: TeamsListResult; event: never };
  "teams.update": { kind: "mutate"; scope: "workspace"; args: TeamsUpdateArgs; result: TeamsUpdateResult; event: never };
  "tickets.create": { kind: "mutate"; scope: "workspace"; args: TicketsCreateArgs; result: TicketsCreateResult; event: never };
  "tickets.delete": { kind: "destructive"; scope: "workspace"; args: TicketsDeleteArgs; result: TicketsDeleteResult; event: never };
  "tickets.get": { kind: "read"; scope: "workspace"; args: TicketsGetArgs; result: TicketsGetResult; event: never };
  "tickets.list": { kind: "read"; scope: "workspace"; args: TicketsListArgs; result: TicketsListResult; event: never };
  "tickets.update": { kind: "mutate"; scope: "workspace"; args: TicketsUpdateArgs; result: TicketsUpdateResult; event: never };
  "users.me": { kind: "read"; scope: "server"; args: UsersMeArgs; result: UsersMeResult; event: never };
  "workspaces.create": { kind: "mutate"; scope: "server"; args: WorkspacesCreateArgs; result: WorkspacesCreateResult; event: never };
  "workspaces.delete": { kind: "destructive"; scope: "server"; args: WorkspacesDeleteArgs; result: WorkspacesDeleteResult; event: never };
  "workspaces.deletions": { kind: "read"; scope: "server"; args: WorkspacesDeletionsArgs; result: WorkspacesDeletionsResult; event: never };
  "workspaces.export": { kind: "read"; scope: "workspace"; args: WorkspacesExportArgs; result: WorkspacesExportResult; event: never };
  "workspaces.list": { kind: "read"; scope: "server"; args: WorkspacesListArgs; result: WorkspacesListResult; event: never };
  "worktrees.add": { kind: "mutate"; scope: "workspace"; args: WorktreesAddArgs; result: WorktreesAddResult; event: never };
  "worktrees.cleanup": { kind: "destructive"; scope: "workspace"; args: WorktreesCleanupArgs; result: WorktreesCleanupResult; event: never };
  "worktrees.list": { kind: "read"; scope: "workspace"; args: WorktreesListArgs; result: WorktreesListResult; event: never };
}

export type OpName = keyof Ops;
export type WatchOpName = { [N in OpName]: Ops[N]["kind"] extends "watch" ? N : never }[OpName];
export type CallOpName = Exclude<OpName, WatchOpName>;

export interface OpMeta {
  kind: "read" | "mutate" | "destructive" | "watch";
  scope: "server" | "workspace";
  minRole: "guest" | "member" | "admin" | "owner";
  serverOwner: boolean;
  /** The argument a watch resumes from after a reconnect: the last event's `seq`. */
  cursor?: "afterSeq";
}

export const OPS: { readonly [N in OpName]: OpMeta } = {
  "agents.create": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "agents.delete": { kind: "destructive", scope: "workspace", minRole: "admin", serverOwner: false },
  "agents.frontDoor": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "agents.get": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "agents.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "agents.run": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "agents.runMany": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "agents.update": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "audit.list": { kind: "read", scope: "workspace", minRole: "admin", serverOwner: false },
  "browser_use": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "chat.beginUserLink": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "chat.botProfile": { kind: "read", scope: "workspace", minRole: "admin", serverOwner: false },
  "chat.connect": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "chat.createApp": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "chat.disconnect": { kind: "destructive", scope: "workspace", minRole: "admin", serverOwner: false },
  "chat.listUserLinks": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "chat.providers": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "chat.setupLink": { kind: "read", scope: "workspace", minRole: "admin", serverOwner: false },
  "chat.status": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "chat.unlinkUser": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "chat.updateBotProfile": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "chat.watchUserLinks": { kind: "watch", scope: "workspace", minRole: "guest", serverOwner: false },
  "code.callees": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "code.callers": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "code.definition": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "code.outline": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "code.references": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "code.search": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "code.status": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "computer_use": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "devices.list": { kind: "read", scope: "server", minRole: "guest", serverOwner: false },
  "devices.pairingCode": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: false },
  "devices.rename": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: false },
  "devices.revoke": { kind: "destructive", scope: "server", minRole: "guest", serverOwner: false },
  "events.list": { kind: "read", scope: "workspace", minRole: "member", serverOwner: false },
  "events.watch": { kind: "watch", scope: "workspace", minRole: "member", serverOwner: false },
  "forge.connect": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "forge.disconnect": { kind: "destructive", scope: "workspace", minRole: "admin", serverOwner: false },
  "forge.linkRepo": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "forge.openPr": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "forge.pr": { kind: "read", scope: "workspace", minRole: "member", serverOwner: false },
  "forge.prs": { kind: "read", scope: "workspace", minRole: "member", serverOwner: false },
  "forge.reviewTemplate": { kind: "read", scope: "workspace", minRole: "member", serverOwner: false },
  "forge.setPolling": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "forge.setWebhookSecret": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "forge.status": { kind: "read", scope: "workspace", minRole: "admin", serverOwner: false },
  "guardrails.get": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "guardrails.set": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "meetings.actionItems.ticket": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "meetings.create": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "meetings.delete": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "meetings.get": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "meetings.importTranscript": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "meetings.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "meetings.notesTemplate": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "meetings.profiles.create": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "meetings.profiles.delete": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "meetings.profiles.fromSpeaker": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "meetings.profiles.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "meetings.relabelSpeakers": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "members.invite": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "members.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "members.remove": { kind: "destructive", scope: "workspace", minRole: "guest", serverOwner: false },
  "members.setRole": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "messages.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "messages.post": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "mobile_use": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "orchestration.approve": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "orchestration.editDag": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "orchestration.get": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "orchestration.start": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "pipelines.bodies.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "pipelines.emit": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "pipelines.runs.cancel": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "pipelines.runs.get": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "pipelines.runs.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "pipelines.runs.start": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "pipelines.runs.wait": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "pipelines.runs.watch": { kind: "watch", scope: "workspace", minRole: "guest", serverOwner: false },
  "pipelines.templates.create": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "pipelines.templates.delete": { kind: "destructive", scope: "workspace", minRole: "admin", serverOwner: false },
  "pipelines.templates.get": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "pipelines.templates.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "pipelines.templates.update": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "pipelines.templates.validate": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "pipelines.triggers.create": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "pipelines.triggers.delete": { kind: "destructive", scope: "workspace", minRole: "admin", serverOwner: false },
  "pipelines.triggers.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "pipelines.triggers.setEnabled": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "repos.get": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "repos.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "repos.register": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "repos.remove": { kind: "destructive", scope: "workspace", minRole: "admin", serverOwner: false },
  "rig.actionLog": { kind: "read", scope: "workspace", minRole: "admin", serverOwner: false },
  "rig.clipboardGrant": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: false },
  "rig.clipboardGrants": { kind: "read", scope: "server", minRole: "guest", serverOwner: false },
  "rig.clipboardRevoke": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: false },
  "rig.devDomains": { kind: "read", scope: "workspace", minRole: "member", serverOwner: false },
  "rig.exec": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "rig.fileLaneUrl": { kind: "read", scope: "workspace", minRole: "member", serverOwner: false },
  "rig.get": { kind: "read", scope: "workspace", minRole: "member", serverOwner: false },
  "rig.grantHosts": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "rig.liveViewUrl": { kind: "read", scope: "workspace", minRole: "member", serverOwner: false },
  "rig.navigate": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "rig.open": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "rig.ports": { kind: "read", scope: "workspace", minRole: "member", serverOwner: false },
  "rig.releaseControl": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "rig.removeDevDomain": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "rig.setDevDomain": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "rig.sharePort": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "rig.takeControl": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "rig.terminalUrl": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "rig.watch": { kind: "watch", scope: "workspace", minRole: "member", serverOwner: false },
  "rig_close": { kind: "destructive", scope: "workspace", minRole: "member", serverOwner: false },
  "rig_list": { kind: "read", scope: "workspace", minRole: "member", serverOwner: false },
  "rigs.buildPack": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: true },
  "rigs.checkPacks": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: true },
  "rigs.images": { kind: "read", scope: "server", minRole: "guest", serverOwner: true },
  "rigs.importImage": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: true },
  "rigs.packs": { kind: "read", scope: "server", minRole: "guest", serverOwner: true },
  "rigs.setMemoryBudget": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: true },
  "rigs.setPackRefresh": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: true },
  "rigs.status": { kind: "read", scope: "server", minRole: "guest", serverOwner: true },
  "rigs.watchPacks": { kind: "watch", scope: "server", minRole: "guest", serverOwner: true },
  "runs.events": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "runs.get": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "runs.interrupt": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "runs.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "server.deactivateUser": { kind: "destructive", scope: "server", minRole: "guest", serverOwner: true },
  "server.info": { kind: "read", scope: "server", minRole: "guest", serverOwner: false },
  "server.retention": { kind: "read", scope: "server", minRole: "guest", serverOwner: true },
  "server.setWorkspaceCreators": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: true },
  "server.storage": { kind: "read", scope: "server", minRole: "guest", serverOwner: true },
  "server.users": { kind: "read", scope: "server", minRole: "guest", serverOwner: true },
  "server.workspaceCreators": { kind: "read", scope: "server", minRole: "guest", serverOwner: true },
  "settings.get": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "settings.set": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "sim_use": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "skills.findings": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "skills.install": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "skills.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "skills.override": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "skills.remove": { kind: "destructive", scope: "workspace", minRole: "admin", serverOwner: false },
  "skills.scan": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "skills.upload": { kind: "mutate", scope: "workspace", minRole: "admin", serverOwner: false },
  "spaces.archive": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "spaces.create": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "spaces.get": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "spaces.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "spaces.rename": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "spaces.watch": { kind: "watch", scope: "workspace", minRole: "guest", serverOwner: false, cursor: "afterSeq" },
  "sso.endpoints": { kind: "read", scope: "server", minRole: "guest", serverOwner: true },
  "sso.getConfig": { kind: "read", scope: "server", minRole: "guest", serverOwner: true },
  "sso.saveConfig": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: true },
  "sso.scimRegenerateToken": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: true },
  "sso.sessionPolicy": { kind: "read", scope: "server", minRole: "guest", serverOwner: true },
  "sso.setPairingEnabled": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: true },
  "sso.setSessionPolicy": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: true },
  "sso.spMetadata": { kind: "read", scope: "server", minRole: "guest", serverOwner: true },
  "sso.status": { kind: "read", scope: "server", minRole: "guest", serverOwner: true },
  "sso.testConnection": { kind: "read", scope: "server", minRole: "guest", serverOwner: true },
  "teams.create": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "teams.delete": { kind: "destructive", scope: "workspace", minRole: "member", serverOwner: false },
  "teams.dispatch": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "teams.get": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "teams.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "teams.update": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "tickets.create": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "tickets.delete": { kind: "destructive", scope: "workspace", minRole: "member", serverOwner: false },
  "tickets.get": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "tickets.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "tickets.update": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "users.me": { kind: "read", scope: "server", minRole: "guest", serverOwner: false },
  "workspaces.create": { kind: "mutate", scope: "server", minRole: "guest", serverOwner: false },
  "workspaces.delete": { kind: "destructive", scope: "server", minRole: "guest", serverOwner: false },
  "workspaces.deletions": { kind: "read", scope: "server", minRole: "guest", serverOwner: true },
  "workspaces.export": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
  "workspaces.list": { kind: "read", scope: "server", minRole: "guest", serverOwner: false },
  "worktrees.add": { kind: "mutate", scope: "workspace", minRole: "member", serverOwner: false },
  "worktrees.cleanup": { kind: "destructive", scope: "workspace", minRole: "member", serverOwner: false },
  "worktrees.list": { kind: "read", scope: "workspace", minRole: "guest", serverOwner: false },
};

/** The error codes of the RPC socket (CONTRACTS.md section 2). */
export const ERROR_CODES = [
  "unauthenticated",
  "forbidden",
  "workspace_required",
  "unknown_op",
  "invalid_args",
  "not_found",
  "conflict",
  "refused",
  "unavailable",
  "internal",
] as const;

/** The domain event types the server's parts declare (the wire names; `events.list` shows them). */
export const EVENT_TYPES = [
  "agents.reasoningFinished",
  "agents.reasoningStarted",
  "agents.runFinished",
  "agents.runStarted",
  "agents.textDelta",
  "agents.toolCallFinished",
  "agents.toolCallStarted",
  "agents.turnFinished",
  "agents.turnStarted",
  "agents.turnWaiting",
  "chat.userLinked",
  "chat.userUnlinked",
  "forge.pullRequest",
  "identity.memberAdded",
  "identity.memberRemoved",
  "identity.memberRoleChanged",
  "identity.workspaceCreated",
  "orchestration.changed",
  "orchestration.nodeApproved",
  "pipeline.runFinished",
  "pipeline.taskFinished",
  "rigs.closed",
  "rigs.controlChanged",
  "rigs.devDomainChanged",
  "rigs.reaped",
  "skills.changed",
  "workspace.messagePosted",
  "workspace.spaceCreated",
  "workspace.spaceProvisioningChanged",
  "workspace.spaceUpdated",
  "workspace.ticketChanged",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
