"""Login lockout (django-axes): the admin's and the dashboard's login page."""

from __future__ import annotations

import secrets

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.urls import reverse

PASSWORD = "a right password 123"


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user(
        username=f"researcher-{secrets.token_hex(3)}", password=PASSWORD, is_staff=True
    )


def login(client, username: str, password: str, ip: str = "10.1.1.1"):
    return client.post(
        reverse("admin:login") + "?next=/dashboard/",
        {"username": username, "password": password},
        REMOTE_ADDR=ip,
    )


def test_wrong_passwords_lock_the_username_at_that_address_out_until_the_cool_off(
    client, staff, settings
):
    limit = settings.AXES_FAILURE_LIMIT
    for _ in range(limit - 1):
        assert login(client, staff.username, "wrong").status_code == 200  # the form again
    locked = login(client, staff.username, "wrong")
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert int(locked["Retry-After"]) == settings.AXES_COOLOFF_TIME.total_seconds()
    # Even the right password is refused during the lockout.
    assert login(client, staff.username, PASSWORD).status_code == 429
    assert "_auth_user_id" not in client.session
    # The same username from another address is not locked out.
    assert login(client, staff.username, PASSWORD, ip="10.2.2.2").status_code == 302
    client.logout()
    # After the cool-off the right password works.
    AccessAttempt.objects.update(
        attempt_time=AccessAttempt.objects.get().attempt_time - settings.AXES_COOLOFF_TIME
    )
    response = login(client, staff.username, PASSWORD)
    assert response.status_code == 302 and response["Location"] == "/dashboard/"
    assert client.session["_auth_user_id"] == str(staff.pk)


def test_behind_the_proxy_a_forged_x_forwarded_for_does_not_escape_the_lockout(
    client, staff, settings
):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.AXES_FAILURE_LIMIT = 2
    for n in range(2):
        response = client.post(
            reverse("admin:login"),
            {"username": staff.username, "password": "wrong"},
            HTTP_X_FORWARDED_FOR=f"192.0.2.{n}, 10.4.4.4",
        )
    assert response.status_code == 429
    assert AccessAttempt.objects.get().ip_address == "10.4.4.4"


def test_a_right_password_before_the_limit_resets_the_count(client, staff, settings):
    limit = settings.AXES_FAILURE_LIMIT
    for _ in range(limit - 1):
        login(client, staff.username, "wrong")
    assert login(client, staff.username, PASSWORD).status_code == 302
    client.logout()
    for _ in range(limit - 1):
        assert login(client, staff.username, "wrong").status_code == 200


def test_the_failure_limit_is_a_setting(client, staff, settings):
    settings.AXES_FAILURE_LIMIT = 2
    assert login(client, staff.username, "wrong").status_code == 200
    assert login(client, staff.username, "wrong").status_code == 429


def test_a_locked_out_json_client_gets_json(client, staff, settings):
    settings.AXES_FAILURE_LIMIT = 1
    response = client.post(
        reverse("admin:login"),
        {"username": staff.username, "password": "wrong"},
        REMOTE_ADDR="10.3.3.3",
        HTTP_ACCEPT="application/json",
    )
    assert response.status_code == 429
    assert response.json()["ok"] is False and response.json()["locked_out"] is True


def test_rotating_ipv6_addresses_inside_one_64_does_not_escape_the_lockout(client, staff, settings):
    for n in range(settings.AXES_FAILURE_LIMIT):
        login(client, staff.username, "wrong", ip=f"2001:db8:5:5::{n + 1:x}")
    assert login(client, staff.username, PASSWORD, ip="2001:db8:5:5::ffff").status_code == 429
    assert login(client, staff.username, PASSWORD, ip="2001:db8:5:6::1").status_code == 302
