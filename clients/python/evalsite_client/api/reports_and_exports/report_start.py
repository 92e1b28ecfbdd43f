from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_out import ErrorOut
from ...models.job_out import JobOut
from ...models.report_start_aggregate import ReportStartAggregate
from ...types import UNSET, Response, Unset


def _get_kwargs(
    slug: str,
    *,
    aggregate: ReportStartAggregate | Unset = ReportStartAggregate.MAJORITY,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_aggregate: str | Unset = UNSET
    if not isinstance(aggregate, Unset):
        json_aggregate = aggregate.value

    params["aggregate"] = json_aggregate

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/campaigns/{slug}/reports".format(
            slug=quote(str(slug), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | JobOut | None:
    if response.status_code == 202:
        response_202 = JobOut.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorOut | JobOut]:
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
    aggregate: ReportStartAggregate | Unset = ReportStartAggregate.MAJORITY,
) -> Response[ErrorOut | JobOut]:
    """Report Start

     Queue a report build; poll ``jobs/{id}``, then read ``reports/latest``.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        aggregate (ReportStartAggregate | Unset): How an item's labels are combined: majority, ds,
            mace. Default: ReportStartAggregate.MAJORITY.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | JobOut]
    """

    kwargs = _get_kwargs(
        slug=slug,
        aggregate=aggregate,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    slug: str,
    *,
    client: AuthenticatedClient,
    aggregate: ReportStartAggregate | Unset = ReportStartAggregate.MAJORITY,
) -> ErrorOut | JobOut | None:
    """Report Start

     Queue a report build; poll ``jobs/{id}``, then read ``reports/latest``.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        aggregate (ReportStartAggregate | Unset): How an item's labels are combined: majority, ds,
            mace. Default: ReportStartAggregate.MAJORITY.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | JobOut
    """

    return sync_detailed(
        slug=slug,
        client=client,
        aggregate=aggregate,
    ).parsed


async def asyncio_detailed(
    slug: str,
    *,
    client: AuthenticatedClient,
    aggregate: ReportStartAggregate | Unset = ReportStartAggregate.MAJORITY,
) -> Response[ErrorOut | JobOut]:
    """Report Start

     Queue a report build; poll ``jobs/{id}``, then read ``reports/latest``.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        aggregate (ReportStartAggregate | Unset): How an item's labels are combined: majority, ds,
            mace. Default: ReportStartAggregate.MAJORITY.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | JobOut]
    """

    kwargs = _get_kwargs(
        slug=slug,
        aggregate=aggregate,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    slug: str,
    *,
    client: AuthenticatedClient,
    aggregate: ReportStartAggregate | Unset = ReportStartAggregate.MAJORITY,
) -> ErrorOut | JobOut | None:
    """Report Start

     Queue a report build; poll ``jobs/{id}``, then read ``reports/latest``.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        aggregate (ReportStartAggregate | Unset): How an item's labels are combined: majority, ds,
            mace. Default: ReportStartAggregate.MAJORITY.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | JobOut
    """

    return (
        await asyncio_detailed(
            slug=slug,
            client=client,
            aggregate=aggregate,
        )
    ).parsed
