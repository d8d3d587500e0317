// What the backup and restore log viewers share: the artifact fetched as text once it may be, the
// text with its search matches marked (the current one outlined), and the download link.
import { Button } from '@patternfly/react-core';
import DownloadIcon from '@patternfly/react-icons/dist/esm/icons/download-icon';
import { useLoad, type Loaded } from '../hooks';
import { fetchArtifact, type ArtifactOwner } from '../lib/artifacts';
import { splitAtMatches } from '../lib/logSearch';

/** Fetches the log of a backup or restore while `enabled` (else answers null without asking the gateway). */
export function useLogText(namespace: string, kind: ArtifactOwner, name: string, enabled: boolean): Loaded<string | null> {
  return useLoad<string | null>(
    (signal) => (enabled ? fetchArtifact(namespace, kind, name, 'log', signal) : Promise.resolve(null)),
    `${namespace}/${kind}/${name}/log/${enabled}`,
  );
}

const CURRENT_MATCH = {
  outline: '2px solid var(--pf-t--global--border--color--status--warning--default, #f0ab00)',
  background: 'var(--pf-t--global--color--nonstatus--orange--default, #f8ae54)',
};

/** `text` with each range in a <mark data-match=N>; the `current` match is outlined. */
export function MarkedText({ text, ranges, current = -1 }: { text: string; ranges: [number, number][]; current?: number }) {
  return (
    <>
      {splitAtMatches(text, ranges).map((piece, index) =>
        piece.match === null ? (
          piece.text
        ) : (
          <mark
            key={index}
            data-match={piece.match}
            aria-current={piece.match === current ? 'true' : undefined}
            style={piece.match === current ? CURRENT_MATCH : undefined}
          >
            {piece.text}
          </mark>
        ),
      )}
    </>
  );
}

/** A link that downloads `href` as `fileName`. */
export function DownloadLink({ href, fileName, label, isDisabled, testId }: { href: string; fileName: string; label: string; isDisabled?: boolean; testId: string }) {
  return (
    <Button variant="link" icon={<DownloadIcon />} component="a" href={href} download={fileName} isDisabled={isDisabled} data-testid={testId}>
      {label}
    </Button>
  );
}
