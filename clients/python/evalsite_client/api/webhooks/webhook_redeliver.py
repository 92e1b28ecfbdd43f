from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.delivery_out import DeliveryOut
from ...models.error_out import ErrorOut
from ...types import Response


def _get_kwargs(
    slug: str,
    delivery_id: UUID,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/campaigns/{slug}/webhooks/deliveries/{delivery_id}/redeliver".format(
            slug=quote(str(slug), safe=""),
            delivery_id=quote(str(delivery_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> DeliveryOut | ErrorOut | None:
    if response.status_code == 202:
        response_202 = DeliveryOut.from_dict(response.json())

        return response_202

    if response.status_code == 400:
        response_400 = ErrorOut.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorOut.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = ErrorOut.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = ErrorOut.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = ErrorOut.from_dict(response.json())

        return response_409

    if response.status_code == 422:
        response_422 = ErrorOut.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = ErrorOut.from_dict(response.json())

        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[DeliveryOut | ErrorOut]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    slug: str,
    delivery_id: UUID,
    *,
    client: AuthenticatedClient,
) -> Response[DeliveryOut | ErrorOut]:
    """Webhook Redeliver

     Send a delivered or failed delivery again under the same id, with fresh attempts
    (``delivery_redeliver``; it turns a deactivated endpoint on again).

    Args:
        slug (str): The campaign's slug. Example: study-1.
        delivery_id (UUID): The delivery's id (X-Evalsite-Delivery). Example:
            5f0c2b4e-9d1a-4c3e-8f5b-0a1b2c3d4e5f.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DeliveryOut | ErrorOut]
    """

    kwargs = _get_kwargs(
        slug=slug,
        delivery_id=delivery_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    slug: str,
    delivery_id: UUID,
    *,
    client: AuthenticatedClient,
) -> DeliveryOut | ErrorOut | None:
    """Webhook Redeliver

     Send a delivered or failed delivery again under the same id, with fresh attempts
    (``delivery_redeliver``; it turns a deactivated endpoint on again).

    Args:
        slug (str): The campaign's slug. Example: study-1.
        delivery_id (UUID): The delivery's id (X-Evalsite-Delivery). Example:
            5f0c2b4e-9d1a-4c3e-8f5b-0a1b2c3d4e5f.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DeliveryOut | ErrorOut
    """

    return sync_detailed(
        slug=slug,
        delivery_id=delivery_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    slug: str,
    delivery_id: UUID,
    *,
    client: AuthenticatedClient,
) -> Response[DeliveryOut | ErrorOut]:
    """Webhook Redeliver

     Send a delivered or failed delivery again under the same id, with fresh attempts
    (``delivery_redeliver``; it turns a deactivated endpoint on again).

    Args:
        slug (str): The campaign's slug. Example: study-1.
        delivery_id (UUID): The delivery's id (X-Evalsite-Delivery). Example:
            5f0c2b4e-9d1a-4c3e-8f5b-0a1b2c3d4e5f.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DeliveryOut | ErrorOut]
    """

    kwargs = _get_kwargs(
        slug=slug,
        delivery_id=delivery_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    slug: str,
    delivery_id: UUID,
    *,
    client: AuthenticatedClient,
) -> DeliveryOut | ErrorOut | None:
    """Webhook Redeliver

     Send a delivered or failed delivery again under the same id, with fresh attempts
    (``delivery_redeliver``; it turns a deactivated endpoint on again).

    Args:
        slug (str): The campaign's slug. Example: study-1.
        delivery_id (UUID): The delivery's id (X-Evalsite-Delivery). Example:
            5f0c2b4e-9d1a-4c3e-8f5b-0a1b2c3d4e5f.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DeliveryOut | ErrorOut
    """

    return (
        await asyncio_detailed(
            slug=slug,
            delivery_id=delivery_id,
            client=client,
        )
    ).parsed
