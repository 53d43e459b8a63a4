-- The authority's answer and the AttachedDocument sent to the customer (docs/dian.md "What is
-- stored and served"): the signed ApplicationResponse of an accepted submission and the signed
-- AttachedDocument (signed document + ApplicationResponse) e-mailed with the PDF. Null when the
-- authority answered without an ApplicationResponse.
ALTER TABLE stampings ADD COLUMN application_response text;
ALTER TABLE stampings ADD COLUMN attached_document text;
