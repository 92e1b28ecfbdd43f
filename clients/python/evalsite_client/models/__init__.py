"""Contains all the data models used in inputs/outputs"""

from .approve_in import ApproveIn
from .campaign_filters import CampaignFilters
from .campaign_filters_status_type_0 import CampaignFiltersStatusType0
from .campaign_in import CampaignIn
from .campaign_in_parameters import CampaignInParameters
from .campaign_in_protocol import CampaignInProtocol
from .campaign_list_status_type_0 import CampaignListStatusType0
from .campaign_out import CampaignOut
from .campaign_out_parameters import CampaignOutParameters
from .campaign_out_settings import CampaignOutSettings
from .campaign_out_study import CampaignOutStudy
from .campaign_page import CampaignPage
from .campaign_update import CampaignUpdate
from .campaign_update_parameters_type_0 import CampaignUpdateParametersType0
from .context_in import ContextIn
from .dataset_export_format import DatasetExportFormat
from .dataset_export_query import DatasetExportQuery
from .dataset_export_query_format import DatasetExportQueryFormat
from .dataset_imported import DatasetImported
from .dataset_out import DatasetOut
from .dataset_out_sources import DatasetOutSources
from .dataset_out_splits import DatasetOutSplits
from .dataset_page import DatasetPage
from .dataset_upload_multi_part_body_params import DatasetUploadMultiPartBodyParams
from .dataset_upload_multi_part_body_params_format import DatasetUploadMultiPartBodyParamsFormat
from .delivery_out import DeliveryOut
from .delivery_out_status import DeliveryOutStatus
from .delivery_page import DeliveryPage
from .error_detail import ErrorDetail
from .error_out import ErrorOut
from .export_in import ExportIn
from .export_in_format import ExportInFormat
from .export_in_what import ExportInWhat
from .figure import Figure
from .generation_in import GenerationIn
from .generation_job_out import GenerationJobOut
from .generation_job_out_status import GenerationJobOutStatus
from .generation_job_page import GenerationJobPage
from .item_in import ItemIn
from .item_in_gold_type_0 import ItemInGoldType0
from .item_in_payload import ItemInPayload
from .items_added import ItemsAdded
from .items_in import ItemsIn
from .items_upload_multi_part_body_params import ItemsUploadMultiPartBodyParams
from .job_out import JobOut
from .job_out_status import JobOutStatus
from .model_in import ModelIn
from .model_in_backend import ModelInBackend
from .model_in_config import ModelInConfig
from .model_in_decoding import ModelInDecoding
from .model_in_preset_type_0 import ModelInPresetType0
from .model_out import ModelOut
from .model_out_config import ModelOutConfig
from .model_out_decoding import ModelOutDecoding
from .model_page import ModelPage
from .page import Page
from .progress_out import ProgressOut
from .report_out import ReportOut
from .report_out_figures import ReportOutFigures
from .report_out_tables import ReportOutTables
from .report_start_aggregate import ReportStartAggregate
from .response_out import ResponseOut
from .response_page import ResponsePage
from .settings_in import SettingsIn
from .status_in import StatusIn
from .status_in_status import StatusInStatus
from .study_in import StudyIn
from .study_in_language import StudyInLanguage
from .summary import Summary
from .table import Table
from .webhook_created import WebhookCreated
from .webhook_in import WebhookIn
from .webhook_in_events_item import WebhookInEventsItem
from .webhook_out import WebhookOut
from .webhook_page import WebhookPage
from .worker_action_action import WorkerActionAction
from .worker_action_in import WorkerActionIn
from .workers_page import WorkersPage

__all__ = (
    "ApproveIn",
    "CampaignFilters",
    "CampaignFiltersStatusType0",
    "CampaignIn",
    "CampaignInParameters",
    "CampaignInProtocol",
    "CampaignListStatusType0",
    "CampaignOut",
    "CampaignOutParameters",
    "CampaignOutSettings",
    "CampaignOutStudy",
    "CampaignPage",
    "CampaignUpdate",
    "CampaignUpdateParametersType0",
    "ContextIn",
    "DatasetExportFormat",
    "DatasetExportQuery",
    "DatasetExportQueryFormat",
    "DatasetImported",
    "DatasetOut",
    "DatasetOutSources",
    "DatasetOutSplits",
    "DatasetPage",
    "DatasetUploadMultiPartBodyParams",
    "DatasetUploadMultiPartBodyParamsFormat",
    "DeliveryOut",
    "DeliveryOutStatus",
    "DeliveryPage",
    "ErrorDetail",
    "ErrorOut",
    "ExportIn",
    "ExportInFormat",
    "ExportInWhat",
    "Figure",
    "GenerationIn",
    "GenerationJobOut",
    "GenerationJobOutStatus",
    "GenerationJobPage",
    "ItemIn",
    "ItemInGoldType0",
    "ItemInPayload",
    "ItemsAdded",
    "ItemsIn",
    "ItemsUploadMultiPartBodyParams",
    "JobOut",
    "JobOutStatus",
    "ModelIn",
    "ModelInBackend",
    "ModelInConfig",
    "ModelInDecoding",
    "ModelInPresetType0",
    "ModelOut",
    "ModelOutConfig",
    "ModelOutDecoding",
    "ModelPage",
    "Page",
    "ProgressOut",
    "ReportOut",
    "ReportOutFigures",
    "ReportOutTables",
    "ReportStartAggregate",
    "ResponseOut",
    "ResponsePage",
    "SettingsIn",
    "StatusIn",
    "StatusInStatus",
    "StudyIn",
    "StudyInLanguage",
    "Summary",
    "Table",
    "WebhookCreated",
    "WebhookIn",
    "WebhookInEventsItem",
    "WebhookOut",
    "WebhookPage",
    "WorkerActionAction",
    "WorkerActionIn",
    "WorkersPage",
)
