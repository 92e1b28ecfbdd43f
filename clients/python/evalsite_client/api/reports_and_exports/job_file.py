from http import HTTPStatus
from io import BytesIO
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_out import ErrorOut
from ...types import File, Response


def _get_kwargs(
    slug: str,
    job_id: int,
    name: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/campaigns/{slug}/jobs/{job_id}/files/{name}".format(
            slug=quote(str(slug), safe=""),
            job_id=quote(str(job_id), safe=""),
            name=quote(str(name), safe=""),
        ),
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | File | None:
    if response.status_code == 200:
        response_200 = File(payload=BytesIO(response.content))

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorOut | File]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    slug: str,
    job_id: int,
    name: str,
    *,
    client: AuthenticatedClient,
) -> Response[ErrorOut | File]:
    """Job File

     Download a file of a finished job (only names the job recorded), streamed from the
    shared storage.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        job_id (int): The job's id.
        name (str): A file the job wrote.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | File]
    """

    kwargs = _get_kwargs(
        slug=slug,
        job_id=job_id,
        name=name,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    slug: str,
    job_id: int,
    name: str,
    *,
    client: AuthenticatedClient,
) -> ErrorOut | File | None:
    """Job File

     Download a file of a finished job (only names the job recorded), streamed from the
    shared storage.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        job_id (int): The job's id.
        name (str): A file the job wrote.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | File
    """

    return sync_detailed(
        slug=slug,
        job_id=job_id,
        name=name,
        client=client,
    ).parsed


async def asyncio_detailed(
    slug: str,
    job_id: int,
    name: str,
    *,
    client: AuthenticatedClient,
) -> Response[ErrorOut | File]:
    """Job File

     Download a file of a finished job (only names the job recorded), streamed from the
    shared storage.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        job_id (int): The job's id.
        name (str): A file the job wrote.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | File]
    """

    kwargs = _get_kwargs(
        slug=slug,
        job_id=job_id,
        name=name,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    slug: str,
    job_id: int,
    name: str,
    *,
    client: AuthenticatedClient,
) -> ErrorOut | File | None:
    """Job File

     Download a file of a finished job (only names the job recorded), streamed from the
    shared storage.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        job_id (int): The job's id.
        name (str): A file the job wrote.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | File
    """

    return (
        await asyncio_detailed(
            slug=slug,
            job_id=job_id,
            name=name,
            client=client,
        )
    ).parsed
