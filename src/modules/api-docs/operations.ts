/**
 * `operationId`s where the naming rule (src/platform/http/operation-ids.ts) reads badly: an action
 * on a path that is not a resource, or two paths that would get the same name. Keyed by
 * `"METHOD /v1/path/{param}"`. Like every operationId, these never change once published (SDK
 * function names): test/openapi.test.ts compares them with test/fixtures/operation-ids.json.
 */
export const OPERATION_ID_OVERRIDES: Readonly<Record<string, string>> = {
  'GET /v1/banks/{id}/logo.svg': 'getBankLogo',
  'GET /v1/accounts/rtkey/{key}': 'lookupRtkey',
  'POST /v1/payments/{id}': 'resendPayment',
  'DELETE /v1/payments/{id}': 'cancelPayment',
  'GET /v1/payments/{id}/intents': 'listPaymentAttempts',
  'POST /v1/balances': 'cashOutBalance',
  'POST /v1/cards/tokenized': 'createCardFromToken',
  'GET /v1/company/allowed-origins': 'getAllowedOrigins',
  'PUT /v1/company/allowed-origins': 'updateAllowedOrigins',
  'POST /v1/charges/banklink': 'createBanklinkCharge',
  'POST /v1/charges/rtkey': 'createRtkeyCharge',
  'POST /v1/request-to-pay/walleta': 'createWalletaRequest',
  'POST /v1/request-to-pay/walleta/{id}/confirm': 'confirmWalletaRequest',
  'POST /v1/request-to-pay/walletb': 'createWalletbRequest',
  'POST /v1/request-to-pay/walletb/{id}/confirm': 'confirmWalletbRequest',
  'POST /v1/invoices/preview': 'previewInvoice',
  'POST /v1/customers/login/request': 'requestCustomerLoginCode',
  'POST /v1/customers/login/verify': 'verifyCustomerLoginCode',
  'POST /v1/rails/wompi/events': 'receiveWompiEvent',
  'POST /v1/rails/wompi/payout-events': 'receiveWompiPayoutEvent',
  'POST /v1/rails/wompi/events/{token}': 'receiveCompanyWompiEvent',
  'POST /v1/rails/wompi/payout-events/{token}': 'receiveCompanyWompiPayoutEvent',
  'POST /v1/campaigns/import-messages': 'importCampaignMessages',
  'GET /v1/utilities/providers/{id}/bills/{reference}': 'getUtilityBill',
  'GET /v1/reports/collections': 'getCollectionsReport',
  'POST /v1/companies/{id}/keys': 'issueCompanyLiveKeys',
};
