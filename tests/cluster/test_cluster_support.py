"""The cluster tests' own names and subnets step past what the machine already uses."""
import ipaddress

from cluster_support import _free_block, _free_tag


def test_the_tag_moves_past_a_leftover_clusters_names():
    taken = {"lo", "eth0", "mxt976-br", "mxt976-h0", "mxt976c-h1", "mxt977-br"}
    assert _free_tag(976, taken) == "978"
    assert _free_tag(1976, taken) == "978"      # the process id is taken modulo 1000
    assert _free_tag(975, taken) == "975"


def test_the_subnet_block_moves_past_a_routed_subnet():
    routes = [ipaddress.ip_network("10.78.130.0/24"), ipaddress.ip_network("192.0.2.0/24")]
    assert _free_block(26, routes) == 27          # 10.78.130-134 is block 26
    assert _free_block(25, routes) == 25          # 10.78.125-129 does not touch it
    assert _free_block(76, routes) == 27          # 76 % 50 == 26
    wide = [ipaddress.ip_network("10.78.128.0/17")]
    assert _free_block(26, wide) == 0             # blocks 26..49 lie in 10.78.128.0/17 and it wraps round
