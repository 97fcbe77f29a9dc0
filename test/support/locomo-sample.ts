/**
 * A tiny LoCoMo-format conversation for the evaluation CLI's tests: two sessions of four turns
 * between two people, and four questions of four categories with their evidence turns. It also
 * carries a derived field (`observation`) that the loader must never read.
 */
const turn = (id: string, speaker: string, text: string) => ({ speaker, dia_id: id, text });

export function locomoConversation(id: string, a: string, b: string, hobby: string, pet: string, city: string) {
  return {
    sample_id: id,
    conversation: {
      speaker_a: a,
      speaker_b: b,
      session_1_date_time: '1:56 pm on 8 May, 2023',
      session_1: [
        turn('D1:1', a, `Hey ${b}! I started ${hobby} lessons last week, it is so much fun.`),
        turn('D1:2', b, 'That sounds great. How often do you practice?'),
        turn('D1:3', a, `Every evening after work. My dog ${pet} watches me the whole time.`),
        turn('D1:4', b, 'Ha, what a loyal dog.'),
      ],
      session_2_date_time: '10:37 am on 15 June, 2023',
      session_2: [
        turn('D2:1', b, `I am moving to ${city} next month for a new job.`),
        turn('D2:2', a, `Wow, ${city}! Will you miss the old neighbourhood?`),
        turn('D2:3', b, 'A little, but the job is a dream of mine.'),
        turn('D2:4', a, `Bye for now, say hi to everyone.`),
      ],
    },
    qa: [
      { question: `What lessons did ${a} start?`, answer: hobby, evidence: ['D1:1'], category: 4 },
      { question: `What is the name of ${a}'s dog?`, answer: pet, evidence: ['D1:3'], category: 1 },
      { question: `Where is ${b} moving to?`, answer: city, evidence: ['D2:1'], category: 3 },
      { question: `When did ${b} say they were moving, and why?`, answer: 'July 2023, a new job', evidence: ['D2:1', 'D2:3'], category: 2 },
    ],
    observation: { note: 'derived fields are never read' },
  };
}
