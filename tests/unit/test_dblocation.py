"""Where a data directory records its database: the URL written reads back exactly, and never keeps a secret."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from hangar.core.dbfailures import shown
from hangar.core.dblocation import IN_USE_LOCK, URL_FILE, exclusively, in_use, record_url, recorded_url
from hangar.errors import Refused


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


@pytest.mark.parametrize("name", [IN_USE_LOCK, URL_FILE])
def test_a_symbolic_link_planted_at_the_data_directorys_files_is_refused_not_followed(
    tmp_path: Path, name: str
) -> None:
    root = tmp_path / "data"
    root.mkdir()
    elsewhere = tmp_path / "elsewhere"
    (root / name).symlink_to(elsewhere)
    with pytest.raises(Refused) as err:
        if name == IN_USE_LOCK:
            with in_use(root):
                pass
        else:
            recorded_url(root)
    assert "is a symbolic link" in err.value.message and str(root / name) in err.value.message
    assert not elsewhere.exists()  # nothing was made through the link
    # The lock taken exclusively (the copy to PostgreSQL) is refused the same way.
    if name == IN_USE_LOCK:
        with pytest.raises(Refused), exclusively(root):
            pass
    else:  # recording the URL is refused too, and writes nothing through the link
        elsewhere.write_text("postgresql://other@/elsewhere\n")
        with pytest.raises(Refused):
            record_url(root, make_url("postgresql://app@/hangar"))
        assert elsewhere.read_text() == "postgresql://other@/elsewhere\n"
