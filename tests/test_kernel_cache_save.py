"""Two processes saving two signatures of one kernel at once: each index names its own machine code."""
from numba.core import caching

from spaceship_sim.kernel_cache import checked_cache_file


def test_a_stale_index_written_last_never_names_the_other_signatures_code(tmp_path):
    checked = checked_cache_file(caching, tmp_path)
    folder = tmp_path / "mod"
    folder.mkdir()
    first, second = (checked(str(folder), "mod.kernel-10.py311", ("stamp", 1)) for _ in range(2))
    first.save(("int64",), "code for int64")
    index = folder / "mod.kernel-10.py311.nbi"
    written_first = index.read_bytes()
    index.unlink()  # the second process read the index before the first saved
    second.save(("float64",), "code for float64")
    index.write_bytes(written_first)  # ... and the first process's index lands last
    assert first.load(("int64",)) == "code for int64"
    assert second.load(("float64",)) is None  # dropped from the index: a miss, compiled again
    assert len(list(folder.glob("*.nbc"))) == 2
