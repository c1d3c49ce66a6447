"""Meetings: records, transcripts, retained audio, diarisation and notes."""
