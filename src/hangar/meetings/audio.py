"""Audio through ffprobe and ffmpeg, confined: uploaded bytes are hostile input to a large C decoder, so the
decoder never runs as the server on the host. Each run is its own sandbox (``hangar.core.hosttool``): the one
input file (or the channels being mixed) bound read-only at ``/in``, nothing writable but a fresh ``/tmp``, no
network, limits on memory, CPU, file size and processes (``LIMITS``), and a wall-clock bound after which its process
group is killed. Nothing is written by the decoder: it prints raw 16 kHz mono 16-bit PCM on its stdout, which the
server counts (up to ``MAX_SECONDS`` of audio) and wraps in a WAV header of its own. Where bubblewrap is missing,
audio is refused unless the server owner switched on trusted host execution (``hangar.core.confine``); then the
same commands run as plain processes, with the same limits but the process count.

- ``probe``: what the upload is (ffprobe's container name); refused when it is not a media file or holds no
  audio stream.
- ``normalise``: the first audio stream as 16 kHz mono 16-bit WAV.
- ``mix``: retained channels summed into one playback track, as long as the longest.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import wave
from collections.abc import Sequence
from pathlib import Path

from hangar.core.confine import trusted_host_exec
from hangar.core.context import AppContext
from hangar.core.hosttool import Ran, ToolLimits, run_tool
from hangar.errors import InvalidArgs, Unavailable

RATE = 16_000  # samples per second of every stored channel and of the playback track
SAMPLE_BYTES = 2
MAX_SECONDS = 6 * 3600  # of audio kept from one channel
TIME_S = 600.0  # wall clock of one ffmpeg run
MEMORY_BYTES = 2 << 30
MAX_PROBE_OUTPUT = 1 << 20
MAX_STDERR = 4096
GUEST_IN = "/in"
# One ffprobe or ffmpeg run: it writes no file (its output is its stdout), so any file it writes in its /tmp is
# small; the processes bound leaves room for ffmpeg's decoding threads.
LIMITS = ToolLimits(
    seconds=TIME_S, cpu_s=int(TIME_S) + 5, memory=MEMORY_BYTES, file_size=16 << 20, processes=64,
    output=MAX_PROBE_OUTPUT, errors=MAX_STDERR,
)  # fmt: skip


class NotAudio(InvalidArgs):
    """The upload is not audio ffmpeg decodes; the message says what ffprobe found."""

    http_status = 422


async def _confined(app: AppContext) -> bool:
    if shutil.which("bwrap") is not None:
        return True
    if await trusted_host_exec(app):
        return False
    raise Unavailable("audio is decoded confined, and bubblewrap (bwrap) is not installed")


async def _run(
    app: AppContext,
    inputs: Sequence[tuple[Path, str]],
    argv: list[str],
    wav_out: Path | None = None,
    max_seconds: int = MAX_SECONDS,
) -> tuple[Ran, int]:
    """Run ``argv`` (naming its inputs as ``/in/<name>``) confined; its stdout into ``wav_out`` as 16 kHz mono PCM
    (bounded by ``max_seconds``, at most ``MAX_SECONDS``), or kept (bounded by ``MAX_PROBE_OUTPUT``). The run and
    the samples written."""
    if shutil.which(argv[0]) is None:
        raise Unavailable(f"{argv[0]} (Debian package ffmpeg) is not installed")
    confined = await _confined(app)
    mounts = [(host, f"{GUEST_IN}/{name}") for host, name in inputs]
    if wav_out is None:
        return await run_tool(argv, LIMITS, mounts=mounts, confined=confined), 0
    output = min(max_seconds, MAX_SECONDS) * RATE * SAMPLE_BYTES
    with wave.open(str(wav_out), "wb") as sink:  # closing it writes the header's sizes
        sink.setnchannels(1)
        sink.setsampwidth(SAMPLE_BYTES)
        sink.setframerate(RATE)
        written = 0

        def write(piece: bytes) -> None:
            nonlocal written
            written += len(piece)
            sink.writeframesraw(piece)

        limits = dataclasses.replace(LIMITS, output=output)
        ran = await run_tool(argv, limits, mounts=mounts, on_stdout=write, confined=confined)
    return ran, written // SAMPLE_BYTES


def _first_line(err: bytes) -> str:
    lines = [ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no reason given"


async def probe(app: AppContext, src: Path) -> str:
    """The container ffprobe reads ``src`` as (``wav``, ``ogg``, ``mov,mp4,…``), which must hold an audio
    stream; ``NotAudio`` otherwise."""
    argv = [
        "ffprobe", "-v", "error", "-show_entries", "stream=codec_type:format=format_name", "-of", "json",
        f"{GUEST_IN}/upload",
    ]  # fmt: skip
    ran, _ = await _run(app, [(src, "upload")], argv)
    if ran.code is None:
        raise NotAudio(f"the upload could not be read within {TIME_S:g} s", field="body")
    try:
        found = json.loads(ran.stdout or b"{}")
    except json.JSONDecodeError:
        found = {}
    if ran.code != 0 or not isinstance(found, dict) or "format" not in found:
        raise NotAudio(f"the upload is not audio: ffprobe cannot read it ({_first_line(ran.stderr)})", field="body")
    streams = found.get("streams") or []
    if not any(isinstance(s, dict) and s.get("codec_type") == "audio" for s in streams):
        raise NotAudio("the upload is not audio: it holds no audio stream", field="body")
    return str(found["format"].get("format_name", "unknown"))[:200]


async def normalise(app: AppContext, src: Path, dest: Path, max_seconds: int = MAX_SECONDS) -> int:
    """``src``'s first audio stream as 16 kHz mono 16-bit WAV at ``dest``, its first ``max_seconds`` (at most
    ``MAX_SECONDS``); the samples written."""
    seconds = min(max_seconds, MAX_SECONDS)
    argv = [
        "ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-i", f"{GUEST_IN}/upload", "-map", "0:a:0", "-vn",
        "-ac", "1", "-ar", str(RATE), "-t", str(seconds), "-f", "s16le", "-acodec", "pcm_s16le", "pipe:1",
    ]  # fmt: skip
    ran, samples = await _run(app, [(src, "upload")], argv, wav_out=dest, max_seconds=seconds)
    if ran.code is None:
        raise NotAudio(f"decoding the upload took longer than {TIME_S:g} s", field="body")
    if ran.code != 0:
        raise NotAudio(f"the upload is not audio ffmpeg decodes: {_first_line(ran.stderr)}", field="body")
    if samples == 0:
        raise NotAudio("the upload holds no audio samples", field="body")
    return samples


async def mix(app: AppContext, channels: Sequence[Path], dest: Path) -> int:
    """The channels summed into one 16 kHz mono WAV at ``dest`` (as long as the longest); the samples written."""
    inputs = [(path, f"{n}.wav") for n, path in enumerate(channels)]
    argv = ["ffmpeg", "-nostdin", "-hide_banner", "-v", "error"]
    for _, name in inputs:
        argv += ["-i", f"{GUEST_IN}/{name}"]
    # Summed, not averaged: each channel is one person's microphone, quiet while others speak.
    argv += ["-filter_complex", f"amix=inputs={len(inputs)}:duration=longest:normalize=0", "-ac", "1", "-ar",
             str(RATE), "-f", "s16le", "-acodec", "pcm_s16le", "pipe:1"]  # fmt: skip
    ran, samples = await _run(app, inputs, argv, wav_out=dest)
    if ran.code != 0:
        reason = "it took too long" if ran.code is None else _first_line(ran.stderr)
        raise Unavailable(f"mixing the meeting's channels failed: {reason}")
    return samples
