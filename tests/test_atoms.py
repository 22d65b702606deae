"""AtomPool: free atoms, best-fit packing onto nodes, taking and releasing."""

from __future__ import annotations

import pytest

from hpcsched.core.atoms import AtomPool, node_of


def test_ids_of_one_machine_and_of_slurm_nodes():
    assert node_of("3") == "" and node_of("node2:1") == "node2"
    with pytest.raises(ValueError, match="duplicate atom ids"):
        AtomPool(["0", "1", "0"])


def test_take_and_release_keep_the_count_and_refuse_double_use():
    pool = AtomPool([str(i) for i in range(4)])
    assert (pool.total, pool.free_count) == (4, 4)
    pool.take(["1", "2"])
    assert pool.free_count == 2 and pool.choose(2) == ("0", "3")
    with pytest.raises(ValueError, match="atom '1' is not free"):
        pool.take(["1"])
    pool.release(["2"])
    with pytest.raises(ValueError, match="atom '2' is already free"):
        pool.release(["2"])
    assert pool.choose(2) == ("0", "2")  # lowest ids first
    with pytest.raises(ValueError, match="asked for 4 atoms, 3 free"):
        pool.choose(4)


def test_a_full_pool_refuses_even_a_single_node_request():
    pool = AtomPool(["a:0", "a:1"])
    pool.take(["a:0", "a:1"])
    with pytest.raises(ValueError, match="none free"):
        pool.choose(1, single_node=True)
