import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { canonicalize, canonicalizeDocument, child, parseXml, XmlError } from './c14n.ts';
import { hasTool, tempDir } from '../../../test/support/dian.ts';

// Documents without comments (xmllint --c14n keeps comments; ours is the without-comments variant).
const CASES: Record<string, string> = {
  namespaces:
    '<?xml version="1.0"?>\n<r xmlns="urn:a" xmlns:b="urn:b" b:z="1" a="2" xml:lang="es"><b:x xmlns:c="urn:c" xmlns="" c:q="&lt;&amp;&quot;&#9;&#10;&#13;" p="v"><y>t&#13;x&gt;<![CDATA[<cd&>]]></y><?pi2 data?><e/></b:x></r>\n',
  redundant:
    '<a:r xmlns:a="urn:a" xmlns:z="urn:z"><a:s xmlns:a="urn:a" xmlns:z="urn:other"><t xmlns="urn:d"><u xmlns="urn:d" z:k="1" k="2"/></t></a:s></a:r>',
  whitespace: '<r>\n  <a   b = "1"\n  c=\'x"y\' >  spaced\ttext  </a>\n</r>',
  unicode: '<r a="ñ&#x1F680;">Línea 1&#xD;\nLínea 2 — 🚀 &amp;&lt;&gt;"\'</r>',
  pis: '<?first one?><r><?inner   x y ?><?bare?></r><?last?>',
};

test(
  'C14N: the whole document matches xmllint --c14n (an independent implementation)',
  { skip: hasTool('xmllint') ? false : 'xmllint not installed' },
  () => {
    const dir = tempDir('c14n');
    after(() => fs.rmSync(dir, { recursive: true, force: true }));
    for (const [name, xml] of Object.entries(CASES)) {
      const file = path.join(dir, `${name}.xml`);
      fs.writeFileSync(file, xml);
      const expected = spawnSync('xmllint', ['--c14n', file], { encoding: 'utf8' }).stdout;
      assert.equal(canonicalizeDocument(parseXml(xml)), expected, name);
    }
  },
);

test('C14N: a subtree carries the namespaces and xml:* attributes of its ancestors (sorted by namespace URI); comments are dropped', () => {
  const doc = parseXml('<r xmlns="urn:a" xmlns:b="urn:b" xml:lang="es"><b:x b:k="1"><!-- gone --><y/></b:x></r>');
  const x = child(doc.root, 'urn:b', 'x')!;
  assert.equal(canonicalize(x), '<b:x xmlns="urn:a" xmlns:b="urn:b" xml:lang="es" b:k="1"><y></y></b:x>');
  const y = child(x, 'urn:a', 'y')!;
  assert.equal(canonicalize(y), '<y xmlns="urn:a" xmlns:b="urn:b" xml:lang="es"></y>');
});

test('C14N: the enveloped signature is excluded with its subtree', () => {
  const doc = parseXml('<r><a>1</a><s><t/></s><b>2</b></r>');
  const s = child(doc.root, '', 's');
  assert.equal(canonicalizeDocument(doc, s), '<r><a>1</a><b>2</b></r>');
});

test('parser: refuses DOCTYPE (no entity expansion), raw carriage returns, undeclared prefixes, mismatched tags', () => {
  for (const bad of ['<!DOCTYPE r [<!ENTITY x "y">]><r>&x;</r>', '<r>a\rb</r>', '<p:r/>', '<r><a></b></r>', '<r>&bogus;</r>', '<r/><r/>']) {
    assert.throws(() => parseXml(bad), XmlError, bad);
  }
});
