"""The server's side of a forge token for a program a ``hangar worker`` runs: a command agent naming ``forgeRepos``
or a shell step naming ``repoIds``, minted by a server for the worker's claim, never by the worker (which holds no
forge credential: the app's private key stays in the servers).

``POST /worker/forge-tokens`` with ``Authorization: Bearer <worker credential>`` and ``{workspaceId, tryKey,
runId?}``. The server checks, in the database every server shares, that the credential is live and that ``tryKey``
is the current try of a step claimed by a worker holding it, its lease not lapsed (``hangar.pipelines.live_claim``);
with ``runId``, that the agent run is this attempt's and still running (``worker_grants.claimed_run``). Which
repositories the token covers comes from the server's own records, never from the worker: the run's agent's
``forgeRepos`` as the database holds it now, or, without ``runId``, the claimed step's ``repoIds`` in the pipeline
run's template (a ``shell.run`` step). Then it mints what a server hands a program it runs itself
(``CredentialSource.mint``: an installation token narrowed to those repositories and the steps' permissions). The
answer carries the token once; it is never stored, logged, audited or put in an event.

``POST /worker/forge-tokens/revoke`` with the same credential and ``{workspaceId, token}`` ends the token: the
worker asks it when the program's step or run ends, however it ends. A credential revoked since is taken here (so a
worker being shut out can still end what it holds): ending a token gives nothing, and the holder of a token can
end it at the forge anyway.
"""

from __future__ import annotations

import logging

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from hangar.agents.config import CommandAdapter
from hangar.agents.worker_grants import claimed_run, read_ask, worker_credential
from hangar.core.brokering import CredentialSource
from hangar.core.context import AppContext
from hangar.errors import Forbidden, HangarError, InvalidArgs, NotFound
from hangar.pipelines import PipelineEngine, Template, live_claim, parse_try_key

log = logging.getLogger(__name__)

FORGE_TOKENS_PATH = "/worker/forge-tokens"
FORGE_REVOKE_PATH = "/worker/forge-tokens/revoke"
TOKEN_MAX = 255  # characters of a token handed back to be ended (GitHub's are 40 to 100)


class TokenAsk(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    workspace_id: str = Field(alias="workspaceId", min_length=1, max_length=36)
    try_key: str = Field(alias="tryKey", min_length=1, max_length=400)
    run_id: str | None = Field(default=None, alias="runId", min_length=1, max_length=36)


class RevokeAsk(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    workspace_id: str = Field(alias="workspaceId", min_length=1, max_length=36)
    token: str = Field(min_length=1, max_length=TOKEN_MAX, repr=False)


async def forge_tokens(request: Request) -> JSONResponse:
    app: AppContext = request.app.state.ctx
    credential = await worker_credential(request)
    ask = await read_ask(request, TokenAsk, "{workspaceId, tryKey, runId?}")
    try:
        repos = await _repos_of_claim(app, credential.id, ask)
        source = app.maybe_service(CredentialSource) or CredentialSource()
        held = await source.mint(ask.workspace_id, repos)
    except HangarError as err:
        log.info(
            "worker forge tokens: refused to worker credential %s for %s: %s", credential.id, ask.try_key, err.message
        )
        raise
    log.info(
        "worker forge tokens: a token for %s on %s minted for worker credential %s, %s",
        ", ".join(held.repositories),
        held.host,
        credential.id,
        ask.try_key,
    )
    return JSONResponse({"token": held.token, "host": held.host, "repositories": list(held.repositories)})


async def _repos_of_claim(app: AppContext, credential_id: str, ask: TokenAsk) -> tuple[str, ...]:
    """The repositories the claimed program may have a token for, from the server's records."""
    if ask.run_id is not None:
        claimed = await claimed_run(app, credential_id, ask.workspace_id, ask.run_id, ask.try_key)
        adapter = claimed.agent.adapter
        if not isinstance(adapter, CommandAdapter) or not adapter.forge_repos:
            raise Forbidden(f"the agent of run {ask.run_id} names no forgeRepos")
        return tuple(adapter.forge_repos)
    parsed = parse_try_key(ask.try_key)
    if parsed is None:
        raise InvalidArgs("tryKey is not the key of a step's try", field="tryKey")
    if await live_claim(app.dbs.server, ask.workspace_id, ask.try_key, credential_id) is None:
        raise Forbidden(f"{ask.try_key} is not a live claim of a worker with this credential")
    run_id, step_id = parsed[0], parsed[1]
    try:
        run = (await app.service(PipelineEngine).store.load_run(ask.workspace_id, run_id))[0]
    except NotFound:
        raise Forbidden(f"{ask.try_key} is not a step of a pipeline run of this workspace") from None
    step = next((s for s in Template.model_validate(run.template).steps if s.id == step_id), None)
    if step is None or step.body != "shell.run" or not step.config.repo_ids:
        raise Forbidden(f"step {step_id} of run {run_id} is not a shell step naming repoIds")
    return step.config.repo_ids


async def revoke_forge_token(request: Request) -> JSONResponse:
    app: AppContext = request.app.state.ctx
    credential = await worker_credential(request, revoked_too=True)
    ask = await read_ask(request, RevokeAsk, "{workspaceId, token}")
    source = app.maybe_service(CredentialSource) or CredentialSource()
    await source.revoke(ask.workspace_id, ask.token)
    log.info("worker forge tokens: a token ended for worker credential %s", credential.id)
    return JSONResponse({"revoked": True})


ROUTES = [
    Route(FORGE_TOKENS_PATH, forge_tokens, methods=["POST"]),
    Route(FORGE_REVOKE_PATH, revoke_forge_token, methods=["POST"]),
]
