from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.campaign_list_status_type_0 import CampaignListStatusType0
from ...models.campaign_page import CampaignPage
from ...models.error_out import ErrorOut
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    limit: int | Unset = 50,
    offset: int | Unset = 0,
    status: CampaignListStatusType0 | None | Unset = UNSET,
    protocol: None | str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["limit"] = limit

    params["offset"] = offset

    json_status: None | str | Unset
    if isinstance(status, Unset):
        json_status = UNSET
    elif isinstance(status, CampaignListStatusType0):
        json_status = status.value
    else:
        json_status = status
    params["status"] = json_status

    json_protocol: None | str | Unset
    if isinstance(protocol, Unset):
        json_protocol = UNSET
    else:
        json_protocol = protocol
    params["protocol"] = json_protocol

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/campaigns",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> CampaignPage | ErrorOut | None:
    if response.status_code == 200:
        response_200 = CampaignPage.from_dict(response.json())

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
) -> Response[CampaignPage | ErrorOut]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 50,
    offset: int | Unset = 0,
    status: CampaignListStatusType0 | None | Unset = UNSET,
    protocol: None | str | Unset = UNSET,
) -> Response[CampaignPage | ErrorOut]:
    """Campaign List

     The campaigns the key may see, newest first, by status and protocol.

    Args:
        limit (int | Unset):  Default: 50.
        offset (int | Unset):  Default: 0.
        status (CampaignListStatusType0 | None | Unset):
        protocol (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CampaignPage | ErrorOut]
    """

    kwargs = _get_kwargs(
        limit=limit,
        offset=offset,
        status=status,
        protocol=protocol,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 50,
    offset: int | Unset = 0,
    status: CampaignListStatusType0 | None | Unset = UNSET,
    protocol: None | str | Unset = UNSET,
) -> CampaignPage | ErrorOut | None:
    """Campaign List

     The campaigns the key may see, newest first, by status and protocol.

    Args:
        limit (int | Unset):  Default: 50.
        offset (int | Unset):  Default: 0.
        status (CampaignListStatusType0 | None | Unset):
        protocol (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CampaignPage | ErrorOut
    """

    return sync_detailed(
        client=client,
        limit=limit,
        offset=offset,
        status=status,
        protocol=protocol,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 50,
    offset: int | Unset = 0,
    status: CampaignListStatusType0 | None | Unset = UNSET,
    protocol: None | str | Unset = UNSET,
) -> Response[CampaignPage | ErrorOut]:
    """Campaign List

     The campaigns the key may see, newest first, by status and protocol.

    Args:
        limit (int | Unset):  Default: 50.
        offset (int | Unset):  Default: 0.
        status (CampaignListStatusType0 | None | Unset):
        protocol (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CampaignPage | ErrorOut]
    """

    kwargs = _get_kwargs(
        limit=limit,
        offset=offset,
        status=status,
        protocol=protocol,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = 50,
    offset: int | Unset = 0,
    status: CampaignListStatusType0 | None | Unset = UNSET,
    protocol: None | str | Unset = UNSET,
) -> CampaignPage | ErrorOut | None:
    """Campaign List

     The campaigns the key may see, newest first, by status and protocol.

    Args:
        limit (int | Unset):  Default: 50.
        offset (int | Unset):  Default: 0.
        status (CampaignListStatusType0 | None | Unset):
        protocol (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CampaignPage | ErrorOut
    """

    return (
        await asyncio_detailed(
            client=client,
            limit=limit,
            offset=offset,
            status=status,
            protocol=protocol,
        )
    ).parsed
