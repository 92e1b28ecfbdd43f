from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.dataset_imported import DatasetImported
from ...models.dataset_upload_multi_part_body_params import DatasetUploadMultiPartBodyParams
from ...models.error_out import ErrorOut
from ...types import Response


def _get_kwargs(
    *,
    body: DatasetUploadMultiPartBodyParams,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/datasets",
    }

    _kwargs["files"] = body.to_multipart()

    headers["Content-Type"] = "multipart/form-data; boundary=+++"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> DatasetImported | ErrorOut | None:
    if response.status_code == 201:
        response_201 = DatasetImported.from_dict(response.json())

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
) -> Response[DatasetImported | ErrorOut]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: DatasetUploadMultiPartBodyParams,
) -> Response[DatasetImported | ErrorOut]:
    """Dataset Upload

     Import one file as a new data set (``dataset_import``, ``import_dataset``'s service):
    read and checked whole, then stored in one transaction. A malformed file, or one over
    the upload limits (``corpora.limits.UPLOADS``, docs/datasets.md), is a 400 whose message
    names the line or the limit; nothing is stored.

    Args:
        body (DatasetUploadMultiPartBodyParams):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DatasetImported | ErrorOut]
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
    body: DatasetUploadMultiPartBodyParams,
) -> DatasetImported | ErrorOut | None:
    """Dataset Upload

     Import one file as a new data set (``dataset_import``, ``import_dataset``'s service):
    read and checked whole, then stored in one transaction. A malformed file, or one over
    the upload limits (``corpora.limits.UPLOADS``, docs/datasets.md), is a 400 whose message
    names the line or the limit; nothing is stored.

    Args:
        body (DatasetUploadMultiPartBodyParams):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DatasetImported | ErrorOut
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: DatasetUploadMultiPartBodyParams,
) -> Response[DatasetImported | ErrorOut]:
    """Dataset Upload

     Import one file as a new data set (``dataset_import``, ``import_dataset``'s service):
    read and checked whole, then stored in one transaction. A malformed file, or one over
    the upload limits (``corpora.limits.UPLOADS``, docs/datasets.md), is a 400 whose message
    names the line or the limit; nothing is stored.

    Args:
        body (DatasetUploadMultiPartBodyParams):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DatasetImported | ErrorOut]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: DatasetUploadMultiPartBodyParams,
) -> DatasetImported | ErrorOut | None:
    """Dataset Upload

     Import one file as a new data set (``dataset_import``, ``import_dataset``'s service):
    read and checked whole, then stored in one transaction. A malformed file, or one over
    the upload limits (``corpora.limits.UPLOADS``, docs/datasets.md), is a 400 whose message
    names the line or the limit; nothing is stored.

    Args:
        body (DatasetUploadMultiPartBodyParams):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DatasetImported | ErrorOut
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
