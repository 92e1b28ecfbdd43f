from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_out import ErrorOut
from ...models.generation_job_out import GenerationJobOut
from ...types import Response


def _get_kwargs(
    name: str,
    job_id: int,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/models/{name}/jobs/{job_id}".format(
            name=quote(str(name), safe=""),
            job_id=quote(str(job_id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorOut | GenerationJobOut | None:
    if response.status_code == 200:
        response_200 = GenerationJobOut.from_dict(response.json())

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
) -> Response[ErrorOut | GenerationJobOut]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    job_id: int,
    *,
    client: AuthenticatedClient,
) -> Response[ErrorOut | GenerationJobOut]:
    """Generation Get

     A generation job's status and progress (``done`` of ``total`` contexts answered).

    Args:
        name (str): The model's name. Example: generic-bot.
        job_id (int): The generation job's id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | GenerationJobOut]
    """

    kwargs = _get_kwargs(
        name=name,
        job_id=job_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    name: str,
    job_id: int,
    *,
    client: AuthenticatedClient,
) -> ErrorOut | GenerationJobOut | None:
    """Generation Get

     A generation job's status and progress (``done`` of ``total`` contexts answered).

    Args:
        name (str): The model's name. Example: generic-bot.
        job_id (int): The generation job's id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | GenerationJobOut
    """

    return sync_detailed(
        name=name,
        job_id=job_id,
        client=client,
    ).parsed


async def asyncio_detailed(
    name: str,
    job_id: int,
    *,
    client: AuthenticatedClient,
) -> Response[ErrorOut | GenerationJobOut]:
    """Generation Get

     A generation job's status and progress (``done`` of ``total`` contexts answered).

    Args:
        name (str): The model's name. Example: generic-bot.
        job_id (int): The generation job's id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | GenerationJobOut]
    """

    kwargs = _get_kwargs(
        name=name,
        job_id=job_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    name: str,
    job_id: int,
    *,
    client: AuthenticatedClient,
) -> ErrorOut | GenerationJobOut | None:
    """Generation Get

     A generation job's status and progress (``done`` of ``total`` contexts answered).

    Args:
        name (str): The model's name. Example: generic-bot.
        job_id (int): The generation job's id.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | GenerationJobOut
    """

    return (
        await asyncio_detailed(
            name=name,
            job_id=job_id,
            client=client,
        )
    ).parsed
