"""Rigs: machines agents and people drive (terminal first), their lifecycle, egress and ports."""
