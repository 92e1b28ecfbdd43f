from http import HTTPStatus
from io import BytesIO
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.dataset_export_format import DatasetExportFormat
from ...models.error_out import ErrorOut
from ...types import UNSET, File, Response


def _get_kwargs(
    name: str,
    *,
    format_: DatasetExportFormat,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    json_format_ = format_.value
    params["format"] = json_format_

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/datasets/{name}/export".format(
            name=quote(str(name), safe=""),
        ),
        "params": params,
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
    name: str,
    *,
    client: AuthenticatedClient,
    format_: DatasetExportFormat,
) -> Response[ErrorOut | File]:
    """Dataset Export

     Download the data set in a dialogue format (``records_export``): workers by
    pseudonym, de-identification originals left out. Written within the request.

    Args:
        name (str): The data set's name. Example: dialogues-1.
        format_ (DatasetExportFormat):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | File]
    """

    kwargs = _get_kwargs(
        name=name,
        format_=format_,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    name: str,
    *,
    client: AuthenticatedClient,
    format_: DatasetExportFormat,
) -> ErrorOut | File | None:
    """Dataset Export

     Download the data set in a dialogue format (``records_export``): workers by
    pseudonym, de-identification originals left out. Written within the request.

    Args:
        name (str): The data set's name. Example: dialogues-1.
        format_ (DatasetExportFormat):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | File
    """

    return sync_detailed(
        name=name,
        client=client,
        format_=format_,
    ).parsed


async def asyncio_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
    format_: DatasetExportFormat,
) -> Response[ErrorOut | File]:
    """Dataset Export

     Download the data set in a dialogue format (``records_export``): workers by
    pseudonym, de-identification originals left out. Written within the request.

    Args:
        name (str): The data set's name. Example: dialogues-1.
        format_ (DatasetExportFormat):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | File]
    """

    kwargs = _get_kwargs(
        name=name,
        format_=format_,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    name: str,
    *,
    client: AuthenticatedClient,
    format_: DatasetExportFormat,
) -> ErrorOut | File | None:
    """Dataset Export

     Download the data set in a dialogue format (``records_export``): workers by
    pseudonym, de-identification originals left out. Written within the request.

    Args:
        name (str): The data set's name. Example: dialogues-1.
        format_ (DatasetExportFormat):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | File
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            format_=format_,
        )
    ).parsed
