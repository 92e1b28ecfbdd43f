from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_out import ErrorOut
from ...models.summary import Summary
from ...models.worker_action_action import WorkerActionAction
from ...models.worker_action_in import WorkerActionIn
from ...types import UNSET, Response, Unset


def _get_kwargs(
    slug: str,
    pseudonym: str,
    action: WorkerActionAction,
    *,
    body: WorkerActionIn,
    idempotency_key: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/campaigns/{slug}/workers/{pseudonym}/{action}".format(
            slug=quote(str(slug), safe=""),
            pseudonym=quote(str(pseudonym), safe=""),
            action=quote(str(action), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | Summary | None:
    if response.status_code == 200:
        response_200 = Summary.from_dict(response.json())

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorOut | Summary]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    slug: str,
    pseudonym: str,
    action: WorkerActionAction,
    *,
    client: AuthenticatedClient,
    body: WorkerActionIn,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[ErrorOut | Summary]:
    """Worker Action

     Approve or reject (``reason``: the feedback) their submitted assignments, soft-block
    them here, pay a bonus (``amount``, ``reason``), block them on their provider, or forget
    them (erasure: in the campaigns the key's user may see, all of them for a superuser).
    Approve and bonus spend money: send an ``Idempotency-Key``.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        pseudonym (str): The worker's pseudonym.
        action (WorkerActionAction): What to do to the worker.
        idempotency_key (None | str | Unset): Send the same key again to get the first answer
            back: nothing twice.
        body (WorkerActionIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | Summary]
    """

    kwargs = _get_kwargs(
        slug=slug,
        pseudonym=pseudonym,
        action=action,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    slug: str,
    pseudonym: str,
    action: WorkerActionAction,
    *,
    client: AuthenticatedClient,
    body: WorkerActionIn,
    idempotency_key: None | str | Unset = UNSET,
) -> ErrorOut | Summary | None:
    """Worker Action

     Approve or reject (``reason``: the feedback) their submitted assignments, soft-block
    them here, pay a bonus (``amount``, ``reason``), block them on their provider, or forget
    them (erasure: in the campaigns the key's user may see, all of them for a superuser).
    Approve and bonus spend money: send an ``Idempotency-Key``.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        pseudonym (str): The worker's pseudonym.
        action (WorkerActionAction): What to do to the worker.
        idempotency_key (None | str | Unset): Send the same key again to get the first answer
            back: nothing twice.
        body (WorkerActionIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | Summary
    """

    return sync_detailed(
        slug=slug,
        pseudonym=pseudonym,
        action=action,
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    slug: str,
    pseudonym: str,
    action: WorkerActionAction,
    *,
    client: AuthenticatedClient,
    body: WorkerActionIn,
    idempotency_key: None | str | Unset = UNSET,
) -> Response[ErrorOut | Summary]:
    """Worker Action

     Approve or reject (``reason``: the feedback) their submitted assignments, soft-block
    them here, pay a bonus (``amount``, ``reason``), block them on their provider, or forget
    them (erasure: in the campaigns the key's user may see, all of them for a superuser).
    Approve and bonus spend money: send an ``Idempotency-Key``.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        pseudonym (str): The worker's pseudonym.
        action (WorkerActionAction): What to do to the worker.
        idempotency_key (None | str | Unset): Send the same key again to get the first answer
            back: nothing twice.
        body (WorkerActionIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | Summary]
    """

    kwargs = _get_kwargs(
        slug=slug,
        pseudonym=pseudonym,
        action=action,
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    slug: str,
    pseudonym: str,
    action: WorkerActionAction,
    *,
    client: AuthenticatedClient,
    body: WorkerActionIn,
    idempotency_key: None | str | Unset = UNSET,
) -> ErrorOut | Summary | None:
    """Worker Action

     Approve or reject (``reason``: the feedback) their submitted assignments, soft-block
    them here, pay a bonus (``amount``, ``reason``), block them on their provider, or forget
    them (erasure: in the campaigns the key's user may see, all of them for a superuser).
    Approve and bonus spend money: send an ``Idempotency-Key``.

    Args:
        slug (str): The campaign's slug. Example: study-1.
        pseudonym (str): The worker's pseudonym.
        action (WorkerActionAction): What to do to the worker.
        idempotency_key (None | str | Unset): Send the same key again to get the first answer
            back: nothing twice.
        body (WorkerActionIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | Summary
    """

    return (
        await asyncio_detailed(
            slug=slug,
            pseudonym=pseudonym,
            action=action,
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
