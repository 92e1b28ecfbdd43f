from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_out import ErrorOut
from ...models.webhook_out import WebhookOut
from ...types import Response


def _get_kwargs(
    slug: str,
    endpoint_id: int,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/campaigns/{slug}/webhooks/{endpoint_id}".format(
            slug=quote(str(slug), safe=""),
            endpoint_id=quote(str(endpoint_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | WebhookOut | None:
    if response.status_code == 200:
        response_200 = WebhookOut.from_dict(response.json())

        return response_200

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
) -> Response[ErrorOut | WebhookOut]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    slug: str,
    endpoint_id: int,
    *,
    client: AuthenticatedClient,
) -> Response[ErrorOut | WebhookOut]:
    """Webhook Get

    Args:
        slug (str): The campaign's slug. Example: study-1.
        endpoint_id (int): The endpoint's id. Example: 1.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | WebhookOut]
    """

    kwargs = _get_kwargs(
        slug=slug,
        endpoint_id=endpoint_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    slug: str,
    endpoint_id: int,
    *,
    client: AuthenticatedClient,
) -> ErrorOut | WebhookOut | None:
    """Webhook Get

    Args:
        slug (str): The campaign's slug. Example: study-1.
        endpoint_id (int): The endpoint's id. Example: 1.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | WebhookOut
    """

    return sync_detailed(
        slug=slug,
        endpoint_id=endpoint_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    slug: str,
    endpoint_id: int,
    *,
    client: AuthenticatedClient,
) -> Response[ErrorOut | WebhookOut]:
    """Webhook Get

    Args:
        slug (str): The campaign's slug. Example: study-1.
        endpoint_id (int): The endpoint's id. Example: 1.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | WebhookOut]
    """

    kwargs = _get_kwargs(
        slug=slug,
        endpoint_id=endpoint_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    slug: str,
    endpoint_id: int,
    *,
    client: AuthenticatedClient,
) -> ErrorOut | WebhookOut | None:
    """Webhook Get

    Args:
        slug (str): The campaign's slug. Example: study-1.
        endpoint_id (int): The endpoint's id. Example: 1.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | WebhookOut
    """

    return (
        await asyncio_detailed(
            slug=slug,
            endpoint_id=endpoint_id,
            client=client,
        )
    ).parsed
