"""A migration, once on main, never changes: a database records each file's sha256 as
it applies it, and every open refuses a file whose checksum is not the one recorded
(``db.migrate``). A comment edited in a migration (a module's new path, say) would lock
every existing home out. A new migration adds its line here; no line ever changes."""

from __future__ import annotations

from safelight.db.migrate import available_migrations

RELEASED = {  # a migration's number: the sha256 of its file
    "0001": "c7bcfbd35904c0ffb2b8e930db5d2245e9e5022b674a21a4a6db834daed69ca3",
    "0002": "a34b261bc48a3212c1f89222b2400875f322cb68f0d46e7ec4b24e54c7f47ee3",
    "0004": "f93ea0c48e73b6afed43c987887190c1e308e87e4396324fa344cabf3099d7a3",
    "0005": "abbfaf3db71d1b91f32dcd444f088895a849025399fd73552590c57a446d4bf2",
    "0006": "f311c2d133550e488083895dbd630f57ad5a9a52c65eed3208b0c6129c0fa813",
    "0007": "f9369594b0812e861f1e6ae1b2bec257d4991b077034a1cb443004df927b862e",
    "0008": "dc169ecf15ac77fe3def176d8436fdf24af5cc8c3352956f276808ccde004d04",
    "0009": "1d8e3640b97018e4d1980867080f29174db10f43f0d5cc2996198270ff8cd6cf",
    "0010": "55b0676abfc4b3a7b69df062df5e9e56c7bc96968ce2e962aeaecb4a632f43e8",
    "0011": "3f3381686fba3314a185d583c7836b161d7f90ce6eedf3adaecdf55fb95f8731",
    "0012": "12c4e81590edab9724bc4e0e6e21bdc3f6be7dab13a581575157e9d2f45cffb5",
    "0013": "ef1b25d10cff73d8ba738a9524a2b37a9d2a999473e9539452b868a2baf67c4e",
    "0014": "0466ea8043fcfac4fb062193dea913ae3b54448827e93317da4fd0664f2f98dd",
    "0015": "407df2d30aa667849d16768928c1a889a5d86411ce350c7dbd7bc11a850305d7",
    "0016": "6cc4197e9bb30b9ff27383aa0e9d4d3793f949a24d3ac50ce33242f3ed02f1ab",
    "0017": "d7ee5c5a498f6394a47dfe1acda38b7a31339c5e59d3afd83c3f0aef60f575c5",
    "0018": "c44f1aebc23976e618c8e3c750e4c2ffe528aaace4888279d550edbf71936ed8",
    "0019": "8c60f10ba8fa80b6b30e37649fbaaa89b6afc5000d28e33c1c9ecadbb63e8df0",
    "0020": "a81a365755889c82466ddb6e322670890deddb3089e42b5f1ccc6dcd26e9d65b",
    "0021": "08514ea484a4df07192a03264cad8ff2bb4298b0e8917668b8725420bf6cbc0f",
    "0022": "541782f03f3341e47484f9c06b2da66f53e2d4e3d88521aaa5312fd8bfa36902",
    "0023": "990edc87af77161ce819f684f0db13ae8cb8d1595b49b3589828405f9c5c92cc",
}


def test_no_released_migration_changes() -> None:
    now = {m.name[:4]: m.checksum for m in available_migrations()}
    changed = sorted(name for name, checksum in RELEASED.items() if now.get(name) != checksum)
    assert changed == [], f"released migrations edited or removed: {changed}"
