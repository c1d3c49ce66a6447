"""Offline speaker diarisation: who spoke when, from the audio alone, with nothing downloaded at run time.

A classical method, chosen by measured error on the synthetic meetings of the tests (README, Figures): the
pretrained speaker-embedding models that would do better on real rooms all ship their weights separately (a
download at run time, or a large package of their own), and this one needs only arrays.

1. Framing: 25 ms Hamming windows every 10 ms after a pre-emphasis filter.
2. Features: MFCCs (a mel filterbank over the power spectrum, the log, a DCT), 19 cepstral coefficients without
   c0, and each frame's log energy.
3. Speech activity: a frame is speech when its energy stands ``SPEECH_DB`` above the recording's noise floor (a
   low percentile of frame energies); gaps shorter than ``BRIDGE_S`` are bridged and bursts shorter than
   ``MIN_SPEECH_S`` dropped, so the pauses between words stay inside a turn.
4. Segments: each speech run cut at its speaker changes (a sliding ΔBIC between the ``CHANGE_S`` before and
   after each point, diagonal Gaussians), then into pieces of about ``SEGMENT_S``, short enough to hold one voice,
   long enough for a model of it.
5. Clustering with an automatic speaker count: agglomerative, by the Bayesian information criterion (a full-
   covariance Gaussian per cluster over its frames' recording-normalised MFCCs); the cheapest merge is made while
   one Gaussian explains two clusters better than two do, the penalty weighted by ``BIC_PENALTY`` (at most
   ``max_speakers`` clusters remain). Scale-free, so a lone speaker stays one cluster. A cluster with less than
   ``MIN_SPEAKER_S`` of speech is a fragment, not a participant, and is folded into the others. Clusters whose
   voiceprints are at least ``JOIN_SIMILARITY`` alike are joined (BIC alone splits a voice in a long meeting).
6. Resegmentation: a diagonal Gaussian per cluster over its frames' MFCCs; each speech frame goes to the most
   likely speaker, smoothed over ``SMOOTH_S`` (a running vote), then runs become spans, with runs shorter than
   ``MIN_TURN_S`` folded into their neighbours.

Speakers are numbered 1..N in order of first appearance. ``voiceprint`` and ``similarity`` compare a voice across
recordings (``meeting.identifySpeakers`` against saved voice profiles): a match counts when the similarity is at
least ``MATCH_THRESHOLD``.
"""

from __future__ import annotations

import io
import itertools
import wave
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from hangar.errors import InvalidArgs

Floats = npt.NDArray[np.float64]
# Samples are kept in single precision: half the memory of an hour of audio, and far finer than 16-bit PCM.
Samples = npt.NDArray[np.float32]

FRAME_S = 0.025
STEP_S = 0.010
N_MELS = 40
N_CEPS = 19
PRE_EMPHASIS = 0.97
BLOCK_FRAMES = 6000  # a minute of frames per block of feature computation
# Speech activity: decibels above the noise floor (the 10th percentile of frame energies), and the smoothing.
SPEECH_DB = 15.0
NOISE_PERCENTILE = 10.0
BRIDGE_S = 0.35
MIN_SPEECH_S = 0.12
# Initial segments, and the clustering's stopping rule: the weight of the BIC penalty (1 is the textbook
# criterion; tuned on synthetic meetings of seeds 0 to 3, where 2 splits a voice, 3 joins two and 2.5 finds each;
# the bench measures other seeds), and for the cosine alternative its distance.
SEGMENT_S = 1.5
# A cluster with less speech than this is folded into the voices (unless every cluster is that small).
MIN_SPEAKER_S = 3.0
# Speaker-change detection inside a speech run: the span compared on each side, and its BIC penalty's weight
# (tuned with the clustering's: 1.5 cuts inside turns, 3 misses quick replies).
CHANGE_S = 1.0
CHANGE_PENALTY = 2.0
BIC_PENALTY = 2.5
COSINE_DISTANCE = 0.9
# The most initial segments clustered: both clusterings keep an n × n matrix of float64 (6000 is some 290 MB, and
# about two and a half hours of unbroken speech at SEGMENT_S); a recording cut into more is refused, not clustered.
MAX_SEGMENTS = 6000
# Resegmentation: the vote window and the shortest turn kept on its own.
SMOOTH_S = 0.5
MIN_TURN_S = 0.4
# The shortest recording diarised, and the shortest speech a voiceprint is taken from.
MIN_AUDIO_S = 1.0
MIN_VOICE_S = 0.5
# identifySpeakers applies a voice profile to a diarised speaker only at this similarity or above. Measured on the
# synthetic voices (bench/bench_diarization.py, the tests): the same voice saying other words scores 0.69 and
# above, two different voices 0.48 and below.
MATCH_THRESHOLD = 0.6
# Two clusters of one recording are joined as one voice at this similarity or above: stricter than a profile's
# match, since a wrong join loses a speaker outright (at 0.6 two of the four synthetic voices joined once; at 0.7
# a long meeting kept a voice split in two).
JOIN_SIMILARITY = 0.65
SIMILARITY_SCALE = 4.0
VOICEPRINT_DIM = 2 * N_CEPS


@dataclass(frozen=True)
class Span:
    """``speaker`` (1..N, in order of first appearance) spoke from ``start`` to ``end`` seconds."""

    start: float
    end: float
    speaker: int

    def to_state(self) -> dict[str, Any]:
        return {"start": round(self.start, 3), "end": round(self.end, 3), "speaker": self.speaker}


# -- reading audio ------------------------------------------------------------------------------------------------


def read_wav(data: bytes, *, field: str = "audio") -> tuple[Samples, int]:
    """Samples in [-1, 1] (channels averaged) and the rate of a PCM WAV file; a clear error for anything else."""
    if not data:
        raise InvalidArgs("the audio is empty", field=field)
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise InvalidArgs("the audio is not a WAV file (no RIFF/WAVE header)", field=field)
    try:
        with wave.open(io.BytesIO(data), "rb") as wav:
            channels, width, rate = wav.getnchannels(), wav.getsampwidth(), wav.getframerate()
            raw = wav.readframes(wav.getnframes())
    except (wave.Error, EOFError) as exc:
        raise InvalidArgs(f"the audio is not a readable PCM WAV file: {exc}", field=field) from exc
    if rate < 8000 or rate > 192_000:
        raise InvalidArgs(f"the audio's sample rate {rate} Hz is outside 8000 to 192000", field=field)
    if width not in (1, 2, 4):
        raise InvalidArgs(f"the audio's samples are {8 * width}-bit; 8, 16 or 32-bit PCM is read", field=field)
    usable = len(raw) - len(raw) % (width * channels)
    if width == 1:
        ints = (np.frombuffer(raw[:usable], dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    else:
        kind = np.dtype("<i2") if width == 2 else np.dtype("<i4")
        ints = np.frombuffer(raw[:usable], dtype=kind).astype(np.float32) / np.float32(2 ** (8 * width - 1))
    samples = ints.reshape(-1, channels).mean(axis=1) if channels > 1 else ints
    return samples, rate


def _checked(samples: npt.ArrayLike, rate: int, *, least_s: float, what: str) -> Samples:
    if isinstance(rate, bool) or not isinstance(rate, int) or rate < 8000:
        raise InvalidArgs(f"the sample rate must be a whole number of at least 8000 Hz, not {rate!r}", field="rate")
    x = np.asarray(samples, dtype=np.float32).reshape(-1)
    if x.size == 0:
        raise InvalidArgs(f"the {what} is empty", field="audio")
    if not np.all(np.isfinite(x)):
        raise InvalidArgs(f"the {what} holds samples that are not numbers", field="audio")
    if x.size < least_s * rate:
        raise InvalidArgs(f"the {what} is {x.size / rate:.2f} s long; at least {least_s:g} s is needed", field="audio")
    return x


# -- features -----------------------------------------------------------------------------------------------------


def _mel_filterbank(rate: int, n_fft: int) -> Floats:
    def to_mel(hz: Floats) -> Floats:
        return 2595.0 * np.log10(1.0 + hz / 700.0)

    def to_hz(mel: Floats) -> Floats:
        return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)

    top = min(rate / 2.0, 8000.0)
    edges = to_hz(np.linspace(to_mel(np.array(60.0)), to_mel(np.array(top)), N_MELS + 2))
    bins = np.fft.rfftfreq(n_fft, 1.0 / rate)
    bank = np.zeros((N_MELS, bins.size))
    for m in range(N_MELS):
        lo, mid, hi = edges[m], edges[m + 1], edges[m + 2]
        rising = (bins - lo) / max(mid - lo, 1e-9)
        falling = (hi - bins) / max(hi - mid, 1e-9)
        bank[m] = np.clip(np.minimum(rising, falling), 0.0, None)
    return bank


def _dct_matrix() -> Floats:
    n = np.arange(N_MELS)
    k = np.arange(1, N_CEPS + 1)[:, None]
    basis: Floats = np.cos(np.pi * k * (2 * n + 1) / (2 * N_MELS)) * np.sqrt(2.0 / N_MELS)
    return basis


@dataclass(frozen=True)
class Features:
    """Per 10 ms frame: MFCCs (c1..c19) and the log energy in decibels."""

    mfcc: Floats
    energy_db: Floats


def features(x: Samples, rate: int) -> Features:
    """The frames' features, computed a block of ``BLOCK_FRAMES`` at a time so an hour of audio never holds its
    whole frame matrix (nor its spectrum) in memory at once."""
    frame, step = round(FRAME_S * rate), round(STEP_S * rate)
    x = np.pad(x, (0, max(0, frame - x.size)))
    count = 1 + (x.size - frame) // step
    n_fft = 1 << (frame - 1).bit_length()
    window, bank, dct = np.hamming(frame), _mel_filterbank(rate, n_fft).T, _dct_matrix().T
    mfcc, energy = np.empty((count, N_CEPS)), np.empty(count)
    for first in range(0, count, BLOCK_FRAMES):
        last = min(count, first + BLOCK_FRAMES)
        # The block's samples, with the one before it for the pre-emphasis filter.
        lo = first * step
        chunk = x[max(0, lo - 1) : (last - 1) * step + frame].astype(np.float64)
        emphasised = (
            chunk[1:] - PRE_EMPHASIS * chunk[:-1] if lo else np.append(chunk[:1], chunk[1:] - PRE_EMPHASIS * chunk[:-1])
        )
        index = np.arange(frame)[None, :] + step * np.arange(last - first)[:, None]
        frames = emphasised[index] * window
        power = np.abs(np.fft.rfft(frames, n_fft)) ** 2 / n_fft
        mfcc[first:last] = np.log(power @ bank + 1e-10) @ dct
        energy[first:last] = 10.0 * np.log10(np.sum(frames**2, axis=1) / frame + 1e-12)
    return Features(mfcc=mfcc, energy_db=energy)


# -- speech activity ------------------------------------------------------------------------------------------------


def _runs(mask: npt.NDArray[np.bool_]) -> list[tuple[int, int]]:
    """The [start, end) frame ranges where ``mask`` is true."""
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(), strict=True))


def speech_frames(energy_db: Floats) -> npt.NDArray[np.bool_]:
    floor = float(np.percentile(energy_db, NOISE_PERCENTILE))
    # A recording that is speech throughout has no quiet tenth; the loudest frames then bound the threshold.
    threshold = max(floor + SPEECH_DB, float(np.max(energy_db)) - 50.0)
    mask = energy_db > threshold
    bridge, least = round(BRIDGE_S / STEP_S), round(MIN_SPEECH_S / STEP_S)
    runs = _runs(mask)
    for (_, end), (start, _) in itertools.pairwise(runs):
        if start - end <= bridge:
            mask[end:start] = True
    for start, end in _runs(mask):
        if end - start < least:
            mask[start:end] = False
    return mask


# -- segments and clustering ---------------------------------------------------------------------------------------


def _normalised(mfcc: Floats, where: npt.NDArray[np.bool_]) -> Floats:
    speech = mfcc[where]
    mean, std = speech.mean(axis=0), speech.std(axis=0) + 1e-8
    return np.asarray((mfcc - mean) / std, dtype=np.float64)


def _changes(mfcc: Floats, start: int, end: int, penalty: float) -> list[int]:
    """Speaker changes inside one speech run: frames where the ``CHANGE_S`` before and the ``CHANGE_S`` after are
    better told apart by two diagonal Gaussians than one (ΔBIC above zero, its penalty weighted by ``penalty``),
    the strongest first, at least ``CHANGE_S`` apart. Without them a quick reply joins the turn before it in one
    speech run, and a segment straddling the change belongs to neither voice."""
    half = round(CHANGE_S / STEP_S)
    if end - start < 2 * half:
        return []
    dim = mfcc.shape[1]
    points = np.arange(start + half, end - half + 1, max(1, half // 10))
    scores = np.empty(points.size)
    for i, t in enumerate(points.tolist()):
        left, right, both = mfcc[t - half : t], mfcc[t : t + half], mfcc[t - half : t + half]
        logvar = [float(np.sum(np.log(part.var(axis=0) + 1e-6))) for part in (both, left, right)]
        gain = 0.5 * (2 * half * logvar[0] - half * logvar[1] - half * logvar[2])
        scores[i] = gain - 0.5 * penalty * 2 * dim * float(np.log(2 * half))
    chosen: list[int] = []
    for i in np.argsort(-scores).tolist():
        if scores[i] <= 0:
            break
        if all(abs(int(points[i]) - c) >= half for c in chosen):
            chosen.append(int(points[i]))
    return sorted(chosen)


def _segments(mfcc: Floats, mask: npt.NDArray[np.bool_]) -> list[npt.NDArray[np.intp]]:
    """Frame indices of the initial segments: each speech run cut at its speaker changes, and each piece into
    nearly equal parts of about ``SEGMENT_S`` (never overlapping, so no frame counts twice in a model)."""
    size = SEGMENT_S / STEP_S
    out: list[npt.NDArray[np.intp]] = []
    for run_start, run_end in _runs(mask):
        cuts = [run_start, *_changes(mfcc, run_start, run_end, CHANGE_PENALTY), run_end]
        for start, end in itertools.pairwise(cuts):
            pieces = max(1, round((end - start) / size))
            edges = np.linspace(start, end, pieces + 1).astype(np.intp)
            out += [np.arange(a, b) for a, b in itertools.pairwise(edges.tolist()) if b > a]
    return out


def _logdets(counts: Floats, sums: Floats, outers: Floats) -> Floats:
    """log |Σ| of each cluster's full-covariance Gaussian from its sufficient statistics (stacked)."""
    means = sums / counts[:, None]
    cov = outers / counts[:, None, None] - means[:, :, None] * means[:, None, :]
    cov += 1e-6 * np.eye(sums.shape[1])
    logdet: Floats = np.linalg.slogdet(cov)[1]
    return logdet


def cluster_bic(frames: list[Floats], *, max_speakers: int, penalty: float = BIC_PENALTY) -> list[int]:
    """Agglomerative clustering of segments (each a frames × coefficients array) by the Bayesian information
    criterion: the pair whose merge costs least (ΔBIC, how much better two full-covariance Gaussians explain the
    frames than one, less the penalty for the extra parameters) is merged while that is below zero, and further
    while more than ``max_speakers`` clusters remain. The count of speakers is where merging stops.

    Each cluster is kept as sufficient statistics (count, sum, sum of outer products), so a merge's model is the
    sum of two; the costs are a matrix whose merged row alone is computed again (an hour is some 2400 segments)."""
    n, dim = len(frames), int(frames[0].shape[1])
    counts = np.array([f.shape[0] for f in frames], dtype=np.float64)
    sums = np.stack([f.sum(axis=0) for f in frames])
    outers = np.stack([f.T @ f for f in frames])
    logdets = _logdets(counts, sums, outers)
    price = 0.5 * penalty * (dim + dim * (dim + 1) / 2)

    def costs(a: int, others: npt.NDArray[np.intp]) -> Floats:
        joined = counts[others] + counts[a]
        merged = _logdets(joined, sums[others] + sums[a], outers[others] + outers[a])
        gain = 0.5 * (joined * merged - counts[others] * logdets[others] - counts[a] * logdets[a])
        out: Floats = gain - price * np.log(joined)
        return out

    cost = np.full((n, n), np.inf)
    for a in range(n - 1):
        later = np.arange(a + 1, n)
        cost[a, later] = cost[later, a] = costs(a, later)
    alive = np.ones(n, dtype=bool)
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    while len(members) > 1:
        a, b = divmod(int(np.argmin(cost)), n)
        if cost[a, b] > 0 and len(members) <= max_speakers:
            break
        counts[a] += counts[b]
        sums[a] += sums[b]
        outers[a] += outers[b]
        logdets[a] = _logdets(counts[a : a + 1], sums[a : a + 1], outers[a : a + 1])[0]
        members[a] += members.pop(b)
        alive[b] = False
        cost[b, :] = cost[:, b] = np.inf
        others = np.flatnonzero(alive & (np.arange(n) != a))
        if others.size:
            cost[a, others] = cost[others, a] = costs(a, others)
    labels = [0] * n
    for label, key in enumerate(sorted(members)):
        for index in members[key]:
            labels[index] = label
    return labels


def cluster_cosine(frames: list[Floats], *, max_speakers: int, threshold: float = COSINE_DISTANCE) -> list[int]:
    """The alternative measured against ``cluster_bic`` (README, Figures): each segment's mean MFCC as its
    embedding, average-linkage clustering on cosine distance, merging while the nearest pair is closer than
    ``threshold``. It needs the recording's normalisation to separate voices, so a lone speaker splits."""
    vectors = np.stack([f.mean(axis=0) for f in frames])
    unit = vectors / (np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12)
    sums = 1.0 - unit @ unit.T
    members: dict[int, list[int]] = {i: [i] for i in range(len(frames))}
    while len(members) > 1:
        keys = list(members)
        sizes = np.array([len(members[k]) for k in keys], dtype=np.float64)
        # Average linkage kept incrementally: a merged cluster's row is the sum of its parts' rows.
        mean = sums[np.ix_(keys, keys)] / np.outer(sizes, sizes)
        np.fill_diagonal(mean, np.inf)
        i, j = divmod(int(np.argmin(mean)), len(keys))
        if mean[i, j] > threshold and len(members) <= max_speakers:
            break
        a, b = keys[i], keys[j]
        members[a] += members.pop(b)
        sums[a, :] += sums[b, :]
        sums[:, a] += sums[:, b]
    labels = [0] * len(frames)
    for label, key in enumerate(members):
        for index in members[key]:
            labels[index] = label
    return labels


def _print_of(mfcc: Floats) -> list[float]:
    return [float(v) for v in np.concatenate((mfcc.mean(axis=0), mfcc.std(axis=0) + 1e-6))]


def _same_voices_joined(
    mfcc: Floats, seeds: dict[int, npt.NDArray[np.intp]], least: float = JOIN_SIMILARITY
) -> dict[int, npt.NDArray[np.intp]]:
    """Clusters whose voiceprints (over their frames' MFCCs, before the recording's normalisation) are at least
    ``least`` alike are one voice: joined, the most alike first. BIC's
    gain grows with the frames and its penalty only with their logarithm, so in a long meeting it splits one voice
    by what it says; the voiceprint's similarity does not grow with the data."""
    groups = dict(seeds)
    while len(groups) > 1:
        prints = {k: _print_of(mfcc[v]) for k, v in groups.items()}
        keys = sorted(groups)
        best = max(((similarity(prints[a], prints[b]), a, b) for i, a in enumerate(keys) for b in keys[i + 1 :]))
        if best[0] < least:
            break
        _, a, b = best
        groups[a] = np.concatenate((groups[a], groups.pop(b)))
    return groups


# -- resegmentation -------------------------------------------------------------------------------------------------


def _resegment(mfcc: Floats, mask: npt.NDArray[np.bool_], seeds: dict[int, npt.NDArray[np.intp]]) -> Floats:
    """Per frame, the speaker index (as a float; -1 outside speech) by per-speaker diagonal Gaussians."""
    speech = np.flatnonzero(mask)
    labels = np.full(mask.size, -1.0)
    if not seeds:
        return labels
    scores = np.empty((len(seeds), speech.size))
    for row, frames in enumerate(seeds.values()):
        data = mfcc[frames]
        mean, var = data.mean(axis=0), data.var(axis=0) + 1e-3
        diff = mfcc[speech] - mean
        scores[row] = -0.5 * np.sum(diff * diff / var + np.log(var), axis=1)
    # A running vote over ``SMOOTH_S``: each frame's summed log likelihood over its neighbourhood picks the speaker,
    # so one voice's odd frames do not cut its turn into pieces.
    width = max(1, round(SMOOTH_S / STEP_S))
    kernel = np.ones(width)
    # The centred window of the full convolution: as long as the scores even when they are fewer than the window.
    first = (width - 1) // 2
    smoothed = np.stack([np.convolve(s, kernel)[first : first + s.size] for s in scores])
    labels[speech] = np.argmax(smoothed, axis=0).astype(np.float64)
    return labels


def _spans(labels: Floats, keys: list[int]) -> list[tuple[int, int, int]]:
    """Runs of one speaker as (start frame, end frame, speaker key), pauses left out."""
    out: list[tuple[int, int, int]] = []
    for value in sorted({int(v) for v in labels if v >= 0}):
        for start, end in _runs(labels == value):
            out.append((start, end, keys[value]))
    out.sort()
    return out


def _fold_short(spans: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Runs shorter than ``MIN_TURN_S`` go to the neighbour they touch (a flicker, not a turn), then neighbours of
    one speaker with a pause shorter than ``BRIDGE_S`` between them join."""
    least, bridge = round(MIN_TURN_S / STEP_S), round(BRIDGE_S / STEP_S)
    items = [list(s) for s in spans]
    changed = True
    while changed and len(items) > 1:
        changed = False
        for i, (start, end, _) in enumerate(items):
            if end - start >= least:
                continue
            before = items[i - 1] if i > 0 and start - items[i - 1][1] <= bridge else None
            after = items[i + 1] if i + 1 < len(items) and items[i + 1][0] - end <= bridge else None
            target = (
                before
                if after is None or (before is not None and before[1] - before[0] >= after[1] - after[0])
                else after
            )
            if target is None:
                continue
            items[i][2] = target[2]
            changed = True
        merged: list[list[int]] = []
        for item in items:
            if merged and merged[-1][2] == item[2] and item[0] - merged[-1][1] <= bridge:
                merged[-1][1] = item[1]
            else:
                merged.append(item)
        changed = changed and len(merged) < len(items)
        items = merged
    return [(a, b, c) for a, b, c in items]


# -- the entry points -----------------------------------------------------------------------------------------------


def diarize(
    samples: npt.ArrayLike,
    rate: int,
    *,
    max_speakers: int = 8,
    method: Literal["bic", "cosine"] = "bic",
    max_segments: int = MAX_SEGMENTS,
) -> list[Span]:
    """Who spoke when in a mono recording: spans in time order, speakers numbered 1..N by first appearance. A
    recording without speech gives no span. ``method`` picks the clustering (``bic``; ``cosine`` is the measured
    alternative the bench compares it with). A recording cut into more than ``max_segments`` pieces of speech is
    refused (InvalidArgs naming ``maxSegments``) before the clustering's n × n matrix is made."""
    if isinstance(max_speakers, bool) or not isinstance(max_speakers, int) or not 1 <= max_speakers <= 32:
        raise InvalidArgs(
            f"max_speakers must be a whole number from 1 to 32, not {max_speakers!r}", field="max_speakers"
        )
    x = _checked(samples, rate, least_s=MIN_AUDIO_S, what="recording")
    feats = features(x, rate)
    mask = speech_frames(feats.energy_db)
    if not mask.any():
        return []
    mfcc = _normalised(feats.mfcc, mask)
    segments = _segments(mfcc, mask)
    if len(segments) > max_segments:
        raise InvalidArgs(
            f"the recording has {len(segments)} pieces of speech; diarisation clusters at most {max_segments} "
            "(maxSegments): diarise a shorter recording",
            field="maxSegments",
        )
    pieces = [mfcc[seg] for seg in segments]
    if method == "bic":
        found = cluster_bic(pieces, max_speakers=max_speakers)
    else:
        found = cluster_cosine(pieces, max_speakers=max_speakers)
    seeds: dict[int, npt.NDArray[np.intp]] = {}
    for label in sorted(set(found)):
        seeds[label] = np.concatenate([seg for seg, lab in zip(segments, found, strict=True) if lab == label])
    if method == "bic":
        seeds = _same_voices_joined(feats.mfcc, seeds)
    # A cluster holding only a few seconds is a fragment (a laugh, a straddled change), not a participant: its
    # frames go to whichever voice explains them best.
    least = MIN_SPEAKER_S / STEP_S
    if any(frames.size >= least for frames in seeds.values()):
        seeds = {label: frames for label, frames in seeds.items() if frames.size >= least}
    keys = list(seeds)
    spans = _fold_short(_spans(_resegment(mfcc, mask, seeds), keys))
    numbering: dict[int, int] = {}
    out: list[Span] = []
    for start, end, key in spans:
        number = numbering.setdefault(key, len(numbering) + 1)
        out.append(Span(start=start * STEP_S, end=min(end * STEP_S + FRAME_S, x.size / rate), speaker=number))
    return out


def voiceprint(samples: npt.ArrayLike, rate: int) -> list[float]:
    """A fixed-length summary of one voice (``VOICEPRINT_DIM`` numbers: the mean and the spread of each MFCC over
    its speech), comparable across recordings with ``similarity``. Loudness does not move it (c0 is left out)."""
    x = _checked(samples, rate, least_s=MIN_VOICE_S, what="voice sample")
    feats = features(x, rate)
    mask = speech_frames(feats.energy_db)
    if int(mask.sum()) * STEP_S < MIN_VOICE_S:
        raise InvalidArgs(f"the voice sample holds less than {MIN_VOICE_S:g} s of speech", field="audio")
    speech = feats.mfcc[mask]
    return [float(v) for v in np.concatenate((speech.mean(axis=0), speech.std(axis=0) + 1e-6))]


def similarity(a: list[float], b: list[float]) -> float:
    """How alike two voiceprints are, in (0, 1], 1 for identical: ``exp(-k·d)`` where ``d`` is the mean over the
    coefficients of the squared difference of the means scaled by the product of the spreads (a symmetric,
    scale-aware distance between the two voices' distributions). ``MATCH_THRESHOLD`` and above counts as the
    same voice."""
    if len(a) != VOICEPRINT_DIM or len(b) != VOICEPRINT_DIM:
        raise InvalidArgs(f"a voiceprint has {VOICEPRINT_DIM} numbers, not {len(a)} and {len(b)}", field="voiceprint")
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if not (np.all(np.isfinite(va)) and np.all(np.isfinite(vb))):
        raise InvalidArgs("a voiceprint holds values that are not numbers", field="voiceprint")
    spread = np.abs(va[N_CEPS:] * vb[N_CEPS:]) + 1e-9
    distance = float(np.mean((va[:N_CEPS] - vb[:N_CEPS]) ** 2 / spread))
    return float(np.exp(-SIMILARITY_SCALE * distance).item())
