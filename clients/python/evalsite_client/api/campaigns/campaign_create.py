from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.campaign_in import CampaignIn
from ...models.campaign_out import CampaignOut
from ...models.error_out import ErrorOut
from ...types import Response


def _get_kwargs(
    *,
    body: CampaignIn,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/campaigns",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> CampaignOut | ErrorOut | None:
    if response.status_code == 201:
        response_201 = CampaignOut.from_dict(response.json())

        return response_201

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
) -> Response[CampaignOut | ErrorOut]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: CampaignIn,
) -> Response[CampaignOut | ErrorOut]:
    """Campaign Create

     Create a draft campaign as the wizard does (the protocol's published defaults), then
    apply ``settings`` and ``study`` through ``campaign_settings_update``: all or nothing.

    Args:
        body (CampaignIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CampaignOut | ErrorOut]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: CampaignIn,
) -> CampaignOut | ErrorOut | None:
    """Campaign Create

     Create a draft campaign as the wizard does (the protocol's published defaults), then
    apply ``settings`` and ``study`` through ``campaign_settings_update``: all or nothing.

    Args:
        body (CampaignIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CampaignOut | ErrorOut
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: CampaignIn,
) -> Response[CampaignOut | ErrorOut]:
    """Campaign Create

     Create a draft campaign as the wizard does (the protocol's published defaults), then
    apply ``settings`` and ``study`` through ``campaign_settings_update``: all or nothing.

    Args:
        body (CampaignIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CampaignOut | ErrorOut]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: CampaignIn,
) -> CampaignOut | ErrorOut | None:
    """Campaign Create

     Create a draft campaign as the wizard does (the protocol's published defaults), then
    apply ``settings`` and ``study`` through ``campaign_settings_update``: all or nothing.

    Args:
        body (CampaignIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CampaignOut | ErrorOut
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
