import { memoryJournal } from '../../src/journal/memory.js';
import { runJournalContract } from '../contract/journal.contract.js';

runJournalContract('memory', () => ({ open: () => memoryJournal() }), { persistent: false });
