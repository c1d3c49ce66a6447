"""Where a data directory records its database: the URL written reads back exactly, and never keeps a secret."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import make_url

from hangar.core.dbfailures import shown
from hangar.core.dblocation import URL_FILE, record_url, recorded_url


def test_the_recorded_url_reads_back_exactly_with_no_value_made_into_a_parameter(tmp_path: Path) -> None:
    # A socket directory whose name holds "&password=": quoted in the record, it stays part of the host.
    url = make_url("postgresql+psycopg://app@/hangar?host=/tmp/x%26password%3Dz")
    record_url(tmp_path, url)
    back = recorded_url(tmp_path)
    assert back is not None and dict(back.query) == {"host": "/tmp/x&password=z"}
    assert back.username == "app" and back.password is None and back.database == "hangar"


def test_no_secret_of_the_url_is_recorded_or_shown(tmp_path: Path) -> None:
    url = make_url("postgresql://app:user-pw@/hangar?host=/run/pg&password=q-pw&sslpassword=key-pw&sslmode=require")
    record_url(tmp_path, url)
    text = (tmp_path / URL_FILE).read_text()
    for secret in ("user-pw", "q-pw", "key-pw", "password"):
        assert secret not in text and secret not in shown(url)
    back = recorded_url(tmp_path)
    assert back is not None and dict(back.query) == {"host": "/run/pg", "sslmode": "require"}
    assert shown(url) == "postgresql://app@/hangar?host=/run/pg&sslmode=require"
