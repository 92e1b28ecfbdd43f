"""Limits count an IPv6 address by its network (EVALSITE_IPV6_PREFIX, /64 by default) and an
IPv4 address by itself (evalsite.addresses.address_for_limits)."""

from evalsite.addresses import address_for_limits


def test_ipv6_counts_by_its_network_and_ipv4_by_itself(settings):
    assert address_for_limits("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::"
    assert address_for_limits("2001:db8:1:2:ffff:ffff:ffff:ffff") == "2001:db8:1:2::"
    assert address_for_limits("2001:db8:1:3::1") == "2001:db8:1:3::"
    assert address_for_limits("203.0.113.9") == "203.0.113.9"
    assert address_for_limits("not an address") == "not an address"
    settings.EVALSITE_IPV6_PREFIX = 56
    assert address_for_limits("2001:db8:1:2ff::1") == "2001:db8:1:200::"
    settings.EVALSITE_IPV6_PREFIX = 128
    assert address_for_limits("2001:db8::1") == "2001:db8::1"
