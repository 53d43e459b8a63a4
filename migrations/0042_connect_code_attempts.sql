-- The connect link page's wallet-code step counts its own attempts (issue 29, docs/pages.md
-- "Wallet code"): each code tried on the page takes one before the bank is asked; at 5 the step
-- locks for that link and account, and the company sends a new link.
ALTER TABLE connect_link_enrollments ADD COLUMN code_attempts integer NOT NULL DEFAULT 0;
