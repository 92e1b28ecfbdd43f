from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.campaign_out import CampaignOut
from ...models.campaign_update import CampaignUpdate
from ...models.error_out import ErrorOut
from ...types import Response


def _get_kwargs(
    slug: str,
    *,
    body: CampaignUpdate,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "patch",
        "url": "/api/v1/campaigns/{slug}".format(
            slug=quote(str(slug), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> CampaignOut | ErrorOut | None:
    if response.status_code == 200:
        response_200 = CampaignOut.from_dict(response.json())

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
) -> Response[CampaignOut | ErrorOut]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    slug: str,
    *,
    client: AuthenticatedClient,
    body: CampaignUpdate,
) -> Response[CampaignOut | ErrorOut]:
    """Campaign Update

     Change settings, parameters (drafts only) and study texts, all or nothing.

    A budget goes through the dashboard's budget control (the core's
    ``campaign_budget_set``), which refuses one below what is already committed, in any
    status; once live only quality control and the budget change.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        body (CampaignUpdate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CampaignOut | ErrorOut]
    """

    kwargs = _get_kwargs(
        slug=slug,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    slug: str,
    *,
    client: AuthenticatedClient,
    body: CampaignUpdate,
) -> CampaignOut | ErrorOut | None:
    """Campaign Update

     Change settings, parameters (drafts only) and study texts, all or nothing.

    A budget goes through the dashboard's budget control (the core's
    ``campaign_budget_set``), which refuses one below what is already committed, in any
    status; once live only quality control and the budget change.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        body (CampaignUpdate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CampaignOut | ErrorOut
    """

    return sync_detailed(
        slug=slug,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    slug: str,
    *,
    client: AuthenticatedClient,
    body: CampaignUpdate,
) -> Response[CampaignOut | ErrorOut]:
    """Campaign Update

     Change settings, parameters (drafts only) and study texts, all or nothing.

    A budget goes through the dashboard's budget control (the core's
    ``campaign_budget_set``), which refuses one below what is already committed, in any
    status; once live only quality control and the budget change.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        body (CampaignUpdate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CampaignOut | ErrorOut]
    """

    kwargs = _get_kwargs(
        slug=slug,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    slug: str,
    *,
    client: AuthenticatedClient,
    body: CampaignUpdate,
) -> CampaignOut | ErrorOut | None:
    """Campaign Update

     Change settings, parameters (drafts only) and study texts, all or nothing.

    A budget goes through the dashboard's budget control (the core's
    ``campaign_budget_set``), which refuses one below what is already committed, in any
    status; once live only quality control and the budget change.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        body (CampaignUpdate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CampaignOut | ErrorOut
    """

    return (
        await asyncio_detailed(
            slug=slug,
            client=client,
            body=body,
        )
    ).parsed
